package partitions_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

// FuzzDecodeIDs feeds DecodeIDs arbitrary topic data, as a foreign client
// could write it. Whatever it accepts must be within its documented
// contract: at most MaxTopicIDs IDs, non-negative, sorted and distinct,
// and written exactly as EncodeIDs writes them (every set has one
// encoding). Whatever it refuses must be an ErrInvalid error.
func FuzzDecodeIDs(f *testing.F) {
	for _, seed := range []string{
		"", "0", "0-3,7,9-10", "1,1", "2147483647", "2147483646-2147483647",
		"0-1048575", "0-1048576", "0-1048574,1048576", "0-2000000000",
		"1-3,4", "3-1", "01", "-1", "1,", ",", "1--2", "\x00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ids, err := partitions.DecodeIDs([]byte(in))
		// CountIDs, which readers use to refuse a topic before decoding
		// it, agrees with DecodeIDs.
		if n, cerr := partitions.CountIDs([]byte(in)); n != len(ids) || (cerr == nil) != (err == nil) {
			t.Fatalf("CountIDs(%q) = %d, %v; DecodeIDs gave %d IDs, %v", in, n, cerr, len(ids), err)
		}
		if err != nil {
			if !errors.Is(err, rebalance.ErrInvalid) {
				t.Fatalf("DecodeIDs(%q) = %v, want an ErrInvalid error", in, err)
			}
			return
		}
		if len(ids) > partitions.MaxTopicIDs {
			t.Fatalf("DecodeIDs(%q) returned %d IDs, more than MaxTopicIDs (%d)", in, len(ids), partitions.MaxTopicIDs)
		}
		if in != "" && len(ids) == 0 {
			t.Fatalf("DecodeIDs(%q) accepted non-empty data as no IDs", in)
		}
		for i, id := range ids {
			if id < 0 {
				t.Fatalf("DecodeIDs(%q) returned a negative ID %d", in, id)
			}
			if i > 0 && ids[i-1] >= id {
				t.Fatalf("DecodeIDs(%q) is not sorted and distinct at %d: %d then %d", in, i, ids[i-1], id)
			}
		}
		if got := string(partitions.EncodeIDs(ids)); got != in {
			t.Fatalf("DecodeIDs(%q) then EncodeIDs = %q: the encoding is not canonical", in, got)
		}
	})
}

// FuzzEncodeIDs builds a sorted, distinct, non-negative set of IDs from
// a start and a list of gaps (a gap byte of 0 makes a run of adjacent
// IDs) and checks that DecodeIDs reads EncodeIDs's output back to the
// same set.
func FuzzEncodeIDs(f *testing.F) {
	f.Add(int32(0), []byte{})
	f.Add(int32(0), []byte{0, 0, 0, 3, 1, 0})
	f.Add(int32(7), []byte{1, 1, 1})
	f.Add(int32(math.MaxInt32), []byte{})
	f.Add(int32(math.MaxInt32-3), []byte{0, 0, 0, 0})
	f.Add(int32(-5), []byte{0})
	f.Fuzz(func(t *testing.T, start int32, gaps []byte) {
		if start < 0 {
			start = -(start + 1) // every int32 maps to a non-negative one
		}
		ids := []int32{start}
		for _, g := range gaps {
			next := int64(ids[len(ids)-1]) + int64(g) + 1
			if next > math.MaxInt32 || len(ids) == partitions.MaxTopicIDs {
				break
			}
			ids = append(ids, int32(next))
		}
		data := partitions.EncodeIDs(ids)
		got, err := partitions.DecodeIDs(data)
		if err != nil {
			t.Fatalf("DecodeIDs(EncodeIDs(%v)) = %v; EncodeIDs wrote %q", ids, err, data)
		}
		if !slices.Equal(got, ids) {
			t.Fatalf("DecodeIDs(EncodeIDs(%v)) = %v; EncodeIDs wrote %q", ids, got, data)
		}
	})
}
