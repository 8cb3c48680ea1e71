package zksession

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// With a single server, the first dial after a connection that held a
// session goes without the client's pause, and every later one keeps it;
// with several servers the client's own pace is kept: a pause each time
// the dials come back to the server of the last session.
func TestHostsPaceOfDials(t *testing.T) {
	start := time.Unix(1e9, 0)
	tests := []struct {
		servers    int
		first      []bool // the first dials, before any session
		reconnects []bool // the dials after a connection held a session
	}{
		{1, []bool{false, true, true}, []bool{false, true, true}},
		{3, []bool{false, false, false, true, false, false, true}, []bool{false, false, true, false, false, true}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("servers=%d", tt.servers), func(t *testing.T) {
			var servers []string
			for i := range tt.servers {
				servers = append(servers, fmt.Sprintf("127.0.0.1:%d", i+1))
			}
			now := start
			h := &hosts{now: func() time.Time { return now }}
			if err := h.Init(servers); err != nil {
				t.Fatal(err)
			}
			pauses := func(dials int) []bool {
				var got []bool
				for range dials {
					_, pause := h.Next()
					got = append(got, pause)
				}
				return got
			}
			if got := pauses(len(tt.first)); !slices.Equal(got, tt.first) {
				t.Errorf("first dials: pauses %v, want %v", got, tt.first)
			}
			h.Connected() // a connection held a session for a while, and then failed
			now = now.Add(clientPause)
			if got := pauses(len(tt.reconnects)); !slices.Equal(got, tt.reconnects) {
				t.Errorf("reconnecting: pauses %v, want %v", got, tt.reconnects)
			}
			h.Connected() // one that failed at once: the client's pace
			now = now.Add(clientPause / 2)
			if _, pause := h.Next(); !pause && tt.servers == 1 {
				t.Error("no pause after a session that failed at once")
			}
		})
	}
}
