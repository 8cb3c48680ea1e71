package decision

import (
	"testing"

	"github.com/zkalloc/zkalloc/internal/actortest"
	"github.com/zkalloc/zkalloc/rebalance"
)

// BenchmarkCoreLargeHandoff runs one member's core through a large group's
// life: it claims 100,000 partitions in reports of 1,000 (an Update for
// each, every tenth received), hands half of them over when a second
// member joins (received, acked, released), and closes.
func BenchmarkCoreLargeHandoff(b *testing.B) {
	const n, batch = 100_000, 1_000
	all := actortest.PartsN("t", n)
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		h := newCore(&testing.T{}, "a", rebalance.Range, coreOptions{manualClaims: true})
		h.up(1, 1)
		h.members(view(1, 1, 2, "a"))
		h.parts(parts(1, 1, 3, ids...))
		d := h.nextDesired()
		for i := batch; i <= n; i += batch {
			h.grant(d, all[:i]...)
			if i%(10*batch) == 0 {
				h.next()
			}
		}
		h.members(view(1, 1, 4, "a", "b"))
		h.ack(h.next())
		d = h.nextDesired()
		h.grant(d, d.Partitions...)
		h.close()
		h.ack(h.next())
		if !h.c.Drained() {
			b.Fatal("not drained")
		}
	}
}
