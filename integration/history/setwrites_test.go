package history_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/integration/history"
	"github.com/zkalloc/zkalloc/rebalance"
)

// write is a SetWrite for the tables: op "+" adds, "-" removes.
func write(tb testing.TB, who, op, list string, from, to int, res history.WriteResult) history.SetWrite {
	return history.SetWrite{Writer: who, Remove: op == "-", Partitions: parts(tb, list), Invoked: ms(from), Returned: ms(to), Result: res}
}

func TestCheckSetWrites(t *testing.T) {
	t.Parallel()
	ok, failed, unknown := history.WriteOK, history.WriteFailed, history.WriteUnknown
	tests := []struct {
		name          string
		before, after string
		writes        func(tb testing.TB) []history.SetWrite
		want          []string // "t:5 absent", "t:0 present"
	}{
		{
			name: "sequential, as replayed", before: "t:0", after: "t:1",
			writes: func(tb testing.TB) []history.SetWrite {
				return []history.SetWrite{write(tb, "w1", "+", "t:1", 10, 20, ok), write(tb, "w2", "-", "t:0", 30, 40, ok)}
			},
		},
		{
			name: "an addition acknowledged after the removal returned, then missing", before: "t:0", after: "",
			writes: func(tb testing.TB) []history.SetWrite {
				return []history.SetWrite{write(tb, "w1", "-", "t:0", 10, 20, ok), write(tb, "w2", "+", "t:0", 30, 40, ok)}
			},
			want: []string{"t:0 absent"},
		},
		{
			name: "concurrent addition and removal: either outcome", before: "", after: "",
			writes: func(tb testing.TB) []history.SetWrite {
				return []history.SetWrite{write(tb, "w1", "+", "t:0", 10, 40, ok), write(tb, "w2", "-", "t:0", 20, 30, ok)}
			},
		},
		{
			name: "concurrent addition and removal: the other outcome", before: "", after: "t:0",
			writes: func(tb testing.TB) []history.SetWrite {
				return []history.SetWrite{write(tb, "w1", "+", "t:0", 10, 40, ok), write(tb, "w2", "-", "t:0", 20, 30, ok)}
			},
		},
		{
			// Issue 24's sequence: W1 reads T ("0", version 0) to add 7;
			// W2 removes 0 and T is deleted; W3 adds 5, creating T ("5",
			// version 0); W1's compare-and-set on version 0 succeeds.
			name: "a stale compare-and-set on a re-created topic", before: "t:0", after: "t:0 t:7",
			writes: func(tb testing.TB) []history.SetWrite {
				return []history.SetWrite{
					write(tb, "w1", "+", "t:7", 0, 50, ok),
					write(tb, "w2", "-", "t:0", 10, 20, ok),
					write(tb, "w3", "+", "t:5", 25, 30, ok),
				}
			},
			want: []string{"t:0 present", "t:5 absent"},
		},
		{
			name: "a partition nobody wrote changes", before: "t:0 t:1", after: "t:0",
			writes: func(tb testing.TB) []history.SetWrite {
				return []history.SetWrite{write(tb, "w1", "+", "t:0", 10, 20, ok)}
			},
			want: []string{"t:1 absent"},
		},
		{
			name: "an outcome unknown may or may not have taken effect", before: "t:0", after: "",
			writes: func(tb testing.TB) []history.SetWrite {
				return []history.SetWrite{write(tb, "w1", "+", "t:0", 10, 20, ok), write(tb, "w2", "-", "t:0", 5, 8, unknown)}
			},
		},
		{
			name: "a failed write never takes effect", before: "t:0", after: "",
			writes: func(tb testing.TB) []history.SetWrite {
				return []history.SetWrite{write(tb, "w1", "-", "t:0", 10, 20, failed)}
			},
			want: []string{"t:0 absent"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := history.History{
				SetWrites: tt.writes(t),
				SetReads:  []history.SetRead{quiet(100, parts(t, tt.after)), quiet(0, parts(t, tt.before))},
			}
			r := history.Check(h, history.Options{})
			var got []string
			for _, l := range r.LostWrites {
				state := "absent"
				if l.InSet {
					state = "present"
				}
				got = append(got, l.Partition.String()+" "+state)
				if l.Read.Invoked != ms(100) {
					t.Errorf("lost write %v found by the read at %v, want the second", l, l.Read)
				}
			}
			if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
				t.Errorf("lost writes %q, want %q", got, tt.want)
			}
			if r.SetWrites != len(h.SetWrites) || r.SetReads != 2 {
				t.Errorf("SetWrites, SetReads = %d, %d", r.SetWrites, r.SetReads)
			}
			if err := r.Err(); (err != nil) != (len(tt.want) > 0) || err != nil && !strings.Contains(err.Error(), "(d) lost set writes") {
				t.Errorf("Err() = %v", err)
			}
		})
	}
}

// Writes before the first read only start the count; each read is judged
// against the one before it.
func TestCheckSetWritesBetweenReads(t *testing.T) {
	t.Parallel()
	rec := history.NewRecorder(nil)
	rec.SetWrite(write(t, "w0", "+", "t:9", -20, -10, history.WriteOK))
	rec.SetRead(quiet(0, parts(t, "t:9")))
	rec.SetWrite(write(t, "w1", "+", "t:1", 10, 20, history.WriteOK))
	rec.SetRead(quiet(30, parts(t, "t:1 t:9")))
	rec.SetWrite(write(t, "w2", "-", "t:1", 40, 50, history.WriteOK))
	rec.SetRead(quiet(60, parts(t, "t:1 t:9"))) // the removal lost
	r := history.Check(rec.History(), history.Options{})
	if len(r.LostWrites) != 1 || r.LostWrites[0].Partition.String() != "t:1" || r.LostWrites[0].Read.Invoked != ms(60) {
		t.Fatalf("LostWrites = %v, want t:1 at the third read", r.LostWrites)
	}
	// No events: times are shown by the clock.
	if s := r.Err().Error(); !strings.Contains(s, "t:1 in the set as test read it from 12:00:00.060 to 12:00:00.060; the latest writes of it: w1 add [t:1] 12:00:00.010..12:00:00.020 (ok); w2 remove [t:1] 12:00:00.040..12:00:00.050 (ok)") {
		t.Errorf("Err() = %s", s)
	}
}

// quiet is a read of the whole set made while no write was under way.
func quiet(at int, set []rebalance.Partition) history.SetRead {
	return history.SetRead{Reader: "test", Invoked: ms(at), Returned: ms(at), Set: set}
}

// read is a read of topic t, as a writer makes one after each write.
func read(tb testing.TB, from, to int, list string) history.SetRead {
	return history.SetRead{Reader: "r", Invoked: ms(from), Returned: ms(to), Topic: "t", Set: parts(tb, list)}
}

// Reads made while writers write catch a lost write that later writes
// would hide from a read at the end.
func TestCheckSetWritesConcurrentReads(t *testing.T) {
	t.Parallel()
	ok := history.WriteOK
	tests := []struct {
		name   string
		start  string // the set read at the start
		writes []history.SetWrite
		reads  []history.SetRead
		want   []string
	}{
		{
			// W3's addition of t:5 is overwritten by W1's stale
			// compare-and-set; a read then misses it, before W4 empties
			// the topic.
			name:  "a stale compare-and-set, read before it is hidden",
			start: "t:0",
			writes: []history.SetWrite{
				write(t, "w1", "+", "t:7", 0, 50, ok),
				write(t, "w2", "-", "t:0", 10, 20, ok),
				write(t, "w3", "+", "t:5", 25, 30, ok),
				write(t, "w4", "-", "t:0 t:5 t:7", 70, 80, ok),
			},
			reads: []history.SetRead{read(t, 55, 60, "t:0 t:7"), read(t, 90, 95, "")},
			want:  []string{"t:0 present at 55", "t:5 absent at 55"},
		},
		{
			name: "a read overlapping the writes may see either",
			writes: []history.SetWrite{
				write(t, "w1", "+", "t:1", 10, 30, ok),
				write(t, "w2", "-", "t:1", 20, 40, ok),
			},
			reads: []history.SetRead{read(t, 25, 35, "t:1"), read(t, 26, 36, ""), read(t, 41, 42, "")},
		},
		{
			name: "a read after both may not see the first's",
			writes: []history.SetWrite{
				write(t, "w1", "+", "t:1", 10, 20, ok),
				write(t, "w2", "-", "t:1", 30, 40, ok),
			},
			reads: []history.SetRead{read(t, 45, 50, "t:1")},
			want:  []string{"t:1 present at 45"},
		},
		{
			name:   "a read of another topic tells nothing",
			writes: []history.SetWrite{write(t, "w1", "+", "t:1", 10, 20, ok)},
			reads:  []history.SetRead{{Reader: "r", Invoked: ms(30), Returned: ms(31), Topic: "u"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := history.History{SetWrites: tt.writes, SetReads: append(tt.reads, quiet(-1, parts(t, tt.start)))}
			var got []string
			for _, l := range history.Check(h, history.Options{}).LostWrites {
				state := "absent"
				if l.InSet {
					state = "present"
				}
				got = append(got, fmt.Sprintf("%s %s at %d", l.Partition, state, l.Read.Invoked.Sub(t0).Milliseconds()))
			}
			if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
				t.Errorf("lost writes %q, want %q", got, tt.want)
			}
		})
	}
}
