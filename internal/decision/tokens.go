package decision

import "github.com/zkalloc/zkalloc/rebalance"

// tokensOf returns the fencing tokens of assigned, a sorted subset of the
// claims the last Held lists, from that Held; 0 where it gave none.
func (c *Core) tokensOf(assigned []rebalance.Partition) []int64 {
	if len(assigned) == 0 {
		return nil
	}
	held, tokens := c.held.Partitions, c.held.Tokens
	out := make([]int64, len(assigned))
	i := 0 // both lists are sorted: walk them together
	for j, p := range assigned {
		for i < len(held) && rebalance.Compare(held[i], p) < 0 {
			i++
		}
		if i < len(held) && i < len(tokens) && rebalance.Compare(held[i], p) == 0 {
			out[j] = tokens[i]
		}
	}
	return out
}
