package decision

import (
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/membership"
	"github.com/zkalloc/zkalloc/partitions"
	"github.com/zkalloc/zkalloc/session"
)

// TestCoreStartJob: a job runs only while it is the newest, made from
// the newest views, and neither is outdated; it waits while one is, and
// is dropped (no stall is then reported) once newer views have come.
func TestCoreStartJob(t *testing.T) {
	c := NewCore(Config{Member: "a", Strategy: "round-robin", ReleaseTimeout: time.Minute}, t0)
	c.SessionChanged(session.State{Status: session.Up, SessionID: 1, Reconnects: 1})
	c.MembersRead(membership.View{Members: []string{"a"}, Zxid: 10, SessionID: 1, Reconnects: 1})
	c.PartitionsRead(partitions.View{Partitions: actortest.Parts("t", 0), Zxid: 12, SessionID: 1, Reconnects: 1})
	job := c.Ready().Compute
	if job == nil {
		t.Fatal("no job for fresh views")
	}
	for _, tt := range []struct {
		outdated bool
		want     JobStart
	}{{true, JobWait}, {false, JobRun}} {
		if got := c.StartJob(*job, tt.outdated); got != tt.want {
			t.Errorf("StartJob(outdated %v) = %v, want %v", tt.outdated, got, tt.want)
		}
	}

	// Newer views, not yet settled into a job: the one made before is
	// dropped, and no longer awaited.
	c = NewCore(Config{Member: "a", Strategy: "round-robin", ReleaseTimeout: time.Minute, Settle: time.Second}, t0)
	c.SessionChanged(session.State{Status: session.Up, SessionID: 1, Reconnects: 1})
	c.MembersRead(membership.View{Members: []string{"a"}, Zxid: 10, SessionID: 1, Reconnects: 1})
	c.PartitionsRead(partitions.View{Partitions: actortest.Parts("t", 0), Zxid: 12, SessionID: 1, Reconnects: 1})
	c.Tick(t0.Add(time.Second))
	job = c.Ready().Compute
	if job == nil {
		t.Fatal("no job once settled")
	}
	c.MembersRead(membership.View{Members: []string{"a", "b"}, Zxid: 13, SessionID: 1, Reconnects: 1})
	if got := c.StartJob(*job, false); got != JobDrop {
		t.Errorf("StartJob of a job older than the views = %v, want JobDrop", got)
	}
	if c.jobOpen {
		t.Error("a dropped job is still awaited")
	}
	c.Tick(t0.Add(2 * time.Second))
	if next := c.Ready().Compute; next == nil || next.Gen != 13 || len(next.Members) != 2 {
		t.Errorf("job after the drop = %+v, want one at 13 over [a b]", next)
	}
}
