package members

import (
	"math"
	"testing"

	"github.com/go-zookeeper/zk"
)

func TestVerdictsUnseen(t *testing.T) {
	t.Parallel()
	last := verdicts{of: map[string]verdict{"a": {member: true, weight: 1}}, names: []string{"a", "b", "m"}, czxid: 7, cversion: 10}
	tests := []struct {
		name  string
		v     verdicts
		names []string
		stat  zk.Stat
		want  bool
	}{
		{"no verdicts yet", verdicts{}, []string{"a"}, zk.Stat{Czxid: 7, Cversion: 1}, true},
		{"nothing changed", last, []string{"a", "b", "m"}, zk.Stat{Czxid: 7, Cversion: 10}, false},
		{"one joined", last, []string{"a", "b", "c", "m"}, zk.Stat{Czxid: 7, Cversion: 11}, false},
		{"one left, one joined", last, []string{"a", "c", "m"}, zk.Stat{Czxid: 7, Cversion: 12}, false},
		{"the same names, a child gone and back", last, []string{"a", "b", "m"}, zk.Stat{Czxid: 7, Cversion: 12}, true},
		{"one joined, another gone and back", last, []string{"a", "b", "c", "m"}, zk.Stat{Czxid: 7, Cversion: 13}, true},
		{"a new members node", last, []string{"a", "b", "m"}, zk.Stat{Czxid: 8, Cversion: 10}, true},
		{"the counter wrapped", verdicts{of: last.of, names: []string{"a"}, czxid: 7, cversion: math.MaxInt32}, []string{"a", "b"}, zk.Stat{Czxid: 7, Cversion: math.MinInt32}, false},
	}
	for _, tt := range tests {
		if got := tt.v.unseen(tt.names, &tt.stat); got != tt.want {
			t.Errorf("%s: unseen(%q, cversion %d) = %v, want %v", tt.name, tt.names, tt.stat.Cversion, got, tt.want)
		}
	}
}

func TestSymmetricDifference(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b []string
		want int
	}{
		{nil, nil, 0},
		{[]string{"a"}, nil, 1},
		{nil, []string{"a", "b"}, 2},
		{[]string{"a", "b", "d"}, []string{"b", "c", "d", "e"}, 3},
		{[]string{"a", "b"}, []string{"a", "b"}, 0},
	}
	for _, tt := range tests {
		if got := symmetricDifference(tt.a, tt.b); got != tt.want {
			t.Errorf("symmetricDifference(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
