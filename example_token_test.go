package zkalloc_test

import (
	"errors"
	"fmt"
	"sync"

	"github.com/zkalloc/zkalloc"
)

// errFenced is a write refused because a later owner of the partition has
// written.
var errFenced = errors.New("refused: a later owner of the partition has written")

// fencedSink is where the consumers' work goes. Each write carries the
// writer's fencing token for its partition; the sink refuses a write whose
// token is lower than the highest it has seen for that partition. In a
// real store the check and the write are one atomic step: a conditional
// write, or a transaction that stores the token with the data.
type fencedSink struct {
	mu      sync.Mutex
	highest map[zkalloc.Partition]int64
	rows    []string
}

func (s *fencedSink) Write(p zkalloc.Partition, token int64, row string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest[p] {
		return errFenced
	}
	s.highest[p] = token
	s.rows = append(s.rows, row)
	return nil
}

// A consumer passes its partition's fencing token with every write, so
// that the sink can refuse the late writes of an earlier owner: a
// consumer slow to stop a revoked partition, or a process paused past its
// session's expiry while another member took its partitions over. A
// member takes the token from the Update that assigned the partition:
//
//	for u := range alloc.Updates() {
//		for _, p := range u.Revoked {
//			stop(p)
//		}
//		u.Ack()
//		for _, p := range u.Added {
//			token, _ := u.Token(p)
//			start(p, token) // every write of p's work carries token
//		}
//	}
//
// Here the sink alone, with the tokens two owners of one partition would
// have been given; it runs without ZooKeeper.
func ExampleUpdate_Token() {
	sink := &fencedSink{highest: map[zkalloc.Partition]int64{}}
	p := zkalloc.Partition{Topic: "events", ID: 3}

	const tokenA, tokenB = 4294967301, 4294967342 // a owned p, then b took it over
	fmt.Println(sink.Write(p, tokenA, "a: events:3 offset 10"))
	fmt.Println(sink.Write(p, tokenB, "b: events:3 offset 11"))
	fmt.Println(sink.Write(p, tokenA, "a: events:3 offset 11, late")) // a has not stopped yet
	fmt.Println(sink.Write(p, tokenB, "b: events:3 offset 12"))
	fmt.Println(sink.rows)
	// Output:
	// <nil>
	// <nil>
	// refused: a later owner of the partition has written
	// <nil>
	// [a: events:3 offset 10 b: events:3 offset 11 b: events:3 offset 12]
}
