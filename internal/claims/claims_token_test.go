package claims_test

import (
	"slices"
	"testing"
	"time"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/internal/decision"
	"github.com/zkalloc/zkalloc/internal/zksession"
	"github.com/zkalloc/zkalloc/internal/zktest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// tokenOf returns p's token in h; 0 if h does not hold it.
func tokenOf(h decision.Held, p rebalance.Partition) int64 {
	if i := slices.Index(h.Partitions, p); i >= 0 && i < len(h.Tokens) {
		return h.Tokens[i]
	}
	return 0
}

// wantNodeTokens checks that h's token of each of ps is its claim node's
// creation zxid.
func wantNodeTokens(t *testing.T, conn zksession.Conn, h decision.Held, owner int64, data string, ps ...rebalance.Partition) {
	t.Helper()
	for _, p := range ps {
		stat := checkClaim(t, conn, p, owner, data)
		if got := tokenOf(h, p); got != stat.Czxid || got == 0 {
			t.Errorf("token of %s %d, want its claim's czxid %d", p, got, stat.Czxid)
		}
	}
}

// Held reports each claim's token, its node's creation zxid, whether it
// was created in a batch or alone; a claim taken over by another member
// gets a larger token.
func TestClaimsTokens(t *testing.T) {
	t.Parallel()
	srv := zktest.Standalone(t, zktest.Options{})
	servers := []string{srv.Addr()}
	obs := actortest.Observe(t, servers, claimWait)
	a := startClaimer(t, servers, "a", 4*time.Second)
	b := startClaimer(t, servers, "b", 4*time.Second)
	ts := actortest.Parts("t", 0, 1, 2, 3)

	ha := a.waitHeld(holds(a.want(ts[:3]...), ts[:3])) // a batch
	wantNodeTokens(t, obs.Conn, ha, a.st.SessionID, "a", ts[:3]...)
	ha = a.waitHeld(holds(a.want(ts...), ts)) // alone
	wantNodeTokens(t, obs.Conn, ha, a.st.SessionID, "a", ts...)
	if tokenOf(ha, ts[3]) <= tokenOf(ha, ts[0]) {
		t.Errorf("t:3 claimed after t:0 has token %d, not above %d", tokenOf(ha, ts[3]), tokenOf(ha, ts[0]))
	}

	db := b.want(ts[:2]...)
	b.waitHeld(holds(db, nil))
	a.waitHeld(holds(a.want(ts[2:]...), ts[2:]))
	hb := b.waitHeld(holds(db, ts[:2]))
	wantNodeTokens(t, obs.Conn, hb, b.st.SessionID, "b", ts[:2]...)
	for _, p := range ts[:2] {
		if tokenOf(hb, p) <= tokenOf(ha, p) {
			t.Errorf("%s taken over with token %d, not above its earlier owner's %d", p, tokenOf(hb, p), tokenOf(ha, p))
		}
	}
	if h := a.last; tokenOf(h, ts[2]) != tokenOf(ha, ts[2]) || tokenOf(h, ts[3]) != tokenOf(ha, ts[3]) {
		t.Errorf("tokens of the claims a kept changed: %v, were %v", h.Tokens, ha.Tokens[2:])
	}
}
