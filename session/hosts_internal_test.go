package session

import (
	"fmt"
	"slices"
	"testing"
)

// After a connection that held a session, every server is dialed once
// without a pause; the client pauses only before each round after that.
func TestHostsPauseOnlyOnceEveryServerWasTried(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("servers=%d", n), func(t *testing.T) {
			var servers []string
			for i := range n {
				servers = append(servers, fmt.Sprintf("127.0.0.1:%d", i+1))
			}
			h := &hosts{}
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
			// rounds returns the pauses of k rounds of n dials each:
			// the first without one, every later one starting with one.
			rounds := func(k int) []bool {
				var want []bool
				for r := range k {
					for i := range n {
						want = append(want, r > 0 && i == 0)
					}
				}
				return want
			}
			if got, want := pauses(3*n), rounds(3); !slices.Equal(got, want) {
				t.Errorf("first connection: pauses %v, want %v", got, want)
			}
			h.Connected() // a connection held a session, and then failed
			if got, want := pauses(3*n), rounds(3); !slices.Equal(got, want) {
				t.Errorf("reconnecting: pauses %v, want %v", got, want)
			}
		})
	}
}
