package partset

import "context"

// msg is the sealed set of messages the [Set] actor receives.
type msg interface{ isMsg() }

// change asks the actor to add or remove IDs and to reply once the write
// is done or has failed for good.
type change struct {
	// ctx is the caller's: a change whose caller has given up by the time
	// its turn comes is dropped, so an error from Add or Remove means the
	// change was not applied (unless the caller gave up mid-write, or, in
	// a change of several multis, another member made a later topic
	// unwritable between them: see write).
	ctx    context.Context
	remove bool
	topics map[string][]int32 // normalized: valid topics, sorted distinct IDs
	reply  chan<- error       // one slot
}

func (change) isMsg() {}
