package partitions_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/rebalance"
)

func TestEncodeDecodeIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ids  []int32
		want string
	}{
		{nil, ""},
		{[]int32{0}, "0"},
		{[]int32{0, 1, 2, 3}, "0-3"},
		{[]int32{0, 1, 2, 3, 7, 9, 10}, "0-3,7,9-10"},
		{[]int32{5, 7, 9}, "5,7,9"},
		{[]int32{2147483646, 2147483647}, "2147483646-2147483647"},
	}
	for _, tt := range tests {
		got := string(partitions.EncodeIDs(tt.ids))
		if got != tt.want {
			t.Errorf("EncodeIDs(%v) = %q, want %q", tt.ids, got, tt.want)
		}
		back, err := partitions.DecodeIDs([]byte(got))
		if err != nil || !slices.Equal(back, tt.ids) {
			t.Errorf("DecodeIDs(%q) = %v, %v; want %v", got, back, err, tt.ids)
		}
	}
}

func TestDecodeIDsRejectsGarbage(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		",", "1,", ",1", "a", "1-", "-1", "3-1", "1-1", "2,1", "1,1", "1-3,2", "1-3,4", "0-2,3-5",
		"01", "1 ,2", "2147483648", "1--2", "{\"t\":[1]}", "\x00",
	} {
		if ids, err := partitions.DecodeIDs([]byte(in)); !errors.Is(err, rebalance.ErrInvalid) {
			t.Errorf("DecodeIDs(%q) = %v, %v; want ErrInvalid", in, ids, err)
		}
	}
}

func TestSetOperations(t *testing.T) {
	t.Parallel()
	a := []int32{1, 3, 5, 7}
	b := []int32{2, 3, 8}
	if got, want := partitions.Union(a, b), []int32{1, 2, 3, 5, 7, 8}; !slices.Equal(got, want) {
		t.Errorf("Union = %v, want %v", got, want)
	}
	if got, want := partitions.Subtract(a, b), []int32{1, 5, 7}; !slices.Equal(got, want) {
		t.Errorf("Subtract = %v, want %v", got, want)
	}
	if got, err := partitions.NormalizeIDs([]int32{3, 1, 3, 2}); err != nil || !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("NormalizeIDs = %v, %v", got, err)
	}
	if _, err := partitions.NormalizeIDs([]int32{3, -1}); !errors.Is(err, rebalance.ErrInvalid) {
		t.Errorf("NormalizeIDs with a negative ID = %v, want ErrInvalid", err)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	got, err := partitions.Normalize(map[string][]int32{"b": {2, 1, 1}, "empty": nil})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !slices.Equal(got["b"], []int32{1, 2}) {
		t.Errorf("Normalize = %v", got)
	}
	for _, bad := range []string{"a/b", "events:1;audit", "a b", "a,b"} {
		if _, err := partitions.Normalize(map[string][]int32{bad: {1}}); !errors.Is(err, rebalance.ErrInvalid) {
			t.Errorf("Normalize with topic %q = %v, want ErrInvalid", bad, err)
		}
	}
	// 1,976 topics of the longest names fit, 1,977 do not.
	many := make(map[string][]int32)
	for i := range partitions.MaxTopicsBytes / (rebalance.MaxNameLen + 4) {
		many[longTopic(i)] = []int32{0}
	}
	if _, err := partitions.Normalize(many); err != nil {
		t.Errorf("Normalize of %d topics of %d bytes = %v", len(many), rebalance.MaxNameLen, err)
	}
	many[longTopic(len(many))] = []int32{0}
	if _, err := partitions.Normalize(many); !errors.Is(err, rebalance.ErrInvalid) {
		t.Errorf("Normalize of %d topics of %d bytes = %v, want ErrInvalid", len(many), rebalance.MaxNameLen, err)
	}
}

// longTopic is the i-th topic name of [rebalance.MaxNameLen] bytes.
func longTopic(i int) string {
	name := fmt.Sprintf("%05d-", i)
	return name + strings.Repeat("t", rebalance.MaxNameLen-len(name))
}

func TestDecodeIDsBoundsSize(t *testing.T) {
	t.Parallel()
	if _, err := partitions.DecodeIDs([]byte("0-2000000000")); !errors.Is(err, rebalance.ErrInvalid) {
		t.Errorf("a range of two billion IDs = %v, want ErrInvalid", err)
	}
	max := fmt.Sprintf("0-%d", partitions.MaxTopicIDs-1)
	if ids, err := partitions.DecodeIDs([]byte(max)); err != nil || len(ids) != partitions.MaxTopicIDs {
		t.Errorf("DecodeIDs(%q) = %d IDs, %v", max, len(ids), err)
	}
}
