package franzgo

import (
	"context"
	"sync"

	"github.com/zkalloc/zkalloc"
)

// MemSink is a Sink in memory, for tests and as the reference for a real
// one: per partition it keeps the highest token it has accepted and the
// next offset it expects, beside the values. It is safe for concurrent use.
type MemSink struct {
	mu    sync.Mutex
	parts map[zkalloc.Partition]*memPartition
	stats SinkStats
}

type memPartition struct {
	token  int64
	next   int64
	values [][]byte
}

// SinkStats counts a sink's writes.
type SinkStats struct {
	Accepted    int // stored: the records processed
	Redelivered int // offsets already held, dropped: re-reads after a crash
	Fenced      int // refused with ErrFenced: writes of an owner that lost the partition
	Gaps        int // offsets beyond the next expected: records skipped, never in a correct run
}

// Write implements Sink.
func (s *MemSink) Write(_ context.Context, p zkalloc.Partition, token, offset int64, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parts == nil {
		s.parts = make(map[zkalloc.Partition]*memPartition)
	}
	mp := s.parts[p]
	if mp == nil {
		mp = &memPartition{token: token}
		s.parts[p] = mp
	}
	switch {
	case token < mp.token:
		s.stats.Fenced++
		return ErrFenced
	case offset < mp.next:
		mp.token = token
		s.stats.Redelivered++
		return nil
	case offset > mp.next:
		s.stats.Gaps++
	}
	mp.token = token
	mp.next = offset + 1
	mp.values = append(mp.values, value)
	s.stats.Accepted++
	return nil
}

// Stats returns the counts so far.
func (s *MemSink) Stats() SinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Values returns the values stored for p, in offset order.
func (s *MemSink) Values(p zkalloc.Partition) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mp := s.parts[p]; mp != nil {
		return append([][]byte(nil), mp.values...)
	}
	return nil
}

// Token returns the highest token accepted for p, and whether p has had a
// write.
func (s *MemSink) Token(p zkalloc.Partition) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mp := s.parts[p]; mp != nil {
		return mp.token, true
	}
	return 0, false
}
