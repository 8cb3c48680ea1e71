package claims

import (
	"slices"
	"strings"
	"testing"
)

func TestBatchesBoundCountAndBytes(t *testing.T) {
	short := func(n int) []string { return slices.Repeat([]string{"/o/t:1"}, n) }
	long := strings.Repeat("x", 4000)
	for _, tt := range []struct {
		name  string
		paths []string
		data  int
		want  []int
	}{
		{"none", nil, 10, []int{0}},
		{"one", short(1), 10, []int{0, 1}},
		{"a full batch", short(claimBatch), 10, []int{0, claimBatch}},
		{"one more", short(claimBatch + 1), 10, []int{0, claimBatch, claimBatch + 1}},
		{"bytes", slices.Repeat([]string{long}, 300), 0, []int{0, 64, 128, 192, 256, 300}}, // 4,064 bytes each, 64 fit in 256 KiB
		{"one over the bytes alone", []string{"/a", strings.Repeat("x", claimBatchBytes), "/b"}, 0, []int{0, 1, 2, 3}},
	} {
		size := func(i int) int { return len(tt.paths[i]) + tt.data + 64 }
		if got := batches(len(tt.paths), size); !slices.Equal(got, tt.want) {
			t.Errorf("%s: batches = %v, want %v", tt.name, got, tt.want)
		}
	}
}
