// Package bench compares zkalloc's rebalance strategies with the group
// assignors of IBM/sarama and twmb/franz-go on the same inputs. It is a
// module of its own so that users of zkalloc never download either.
//
// Run the benchmarks with
//
//	go test -run '^$' -bench . -benchmem
//
// and print the markdown table of bench/RESULTS.md with
//
//	go test -run TestTable -v -table -timeout 60m
package bench

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/zkalloc/zkalloc/rebalance"
)

// Assignment maps each member to its partitions, topic by topic.
type Assignment map[string]map[string][]int32

// Input is one group to assign: the members, the topics with their
// partition counts (IDs 0 to count-1), and the assignment the members
// had before, which only sticky assignors read.
type Input struct {
	Members []string
	Topics  map[string]int32
	Prev    Assignment
}

// Assignor runs one assignment algorithm. Prepare does, outside the timed
// loop, what a real group does before the leader balances (encoding each
// member's metadata); the function it returns is the timed part, and the
// Result that one returns converts the algorithm's own output, untimed.
type Assignor struct {
	Name   string
	Sticky bool // reads Prev
	// Prepare returns a function computing the assignment of in.
	Prepare func(in Input) func() (Result, error)
}

// Result converts an assignor's output to an Assignment.
type Result func() Assignment

// Assignors returns every assignor compared, ours first.
func Assignors() []Assignor {
	as := []Assignor{
		zk(rebalance.Balanced, "zkalloc balanced"),
		zkSticky("zkalloc sticky"),
		zk(rebalance.RoundRobin, "zkalloc round-robin"),
		zk(rebalance.Range, "zkalloc range"),
		franz(kgo.StickyBalancer(), "franz-go sticky"),
		franz(kgo.CooperativeStickyBalancer(), "franz-go cooperative-sticky"),
		franz(kgo.RoundRobinBalancer(), "franz-go round-robin"),
		franz(kgo.RangeBalancer(), "franz-go range"),
		saramaAssignor(sarama.NewBalanceStrategySticky(), "sarama sticky"),
		saramaAssignor(sarama.NewBalanceStrategyRoundRobin(), "sarama round-robin"),
		saramaAssignor(sarama.NewBalanceStrategyRange(), "sarama range"),
	}
	return as
}

// zk runs a zkalloc strategy on the sorted members and partitions, as an
// allocator does; sorting is not timed, since the allocator keeps its
// views sorted.
func zk(s rebalance.Strategy, name string) Assignor {
	return Assignor{Name: name, Prepare: func(in Input) func() (Result, error) {
		members := slices.Sorted(slices.Values(in.Members))
		parts := Partitions(in.Topics)
		return func() (Result, error) {
			got, err := s.Assign(members, parts)
			if err != nil {
				return nil, err
			}
			return func() Assignment { return fromPartitions(got) }, nil
		}
	}}
}

// zkSticky runs rebalance.Sticky with every member at weight 1, and
// Result.Assigned. Its
// previous placement is built from in.Prev outside the timed part, as an
// allocator holds the placement it read from the agreed record (decoding
// that record is not timed; see docs/sticky.md).
func zkSticky(name string) Assignor {
	return Assignor{Name: name, Sticky: true, Prepare: func(in Input) func() (Result, error) {
		members := make([]rebalance.Member, 0, len(in.Members))
		for _, m := range slices.Sorted(slices.Values(in.Members)) {
			members = append(members, rebalance.Member{Name: m, Weight: 1})
		}
		parts := Partitions(in.Topics)
		prev, err := rebalance.PlacementFrom(ToPartitions(in.Prev))
		if err != nil {
			panic(err)
		}
		return func() (Result, error) {
			got, err := rebalance.Sticky(prev, members, parts)
			if err != nil {
				return nil, err
			}
			// Every member's list is built in the timed part, as a
			// franz-go plan holds every member's: a member of a real
			// group needs only its own (Result.Of), which costs less.
			all := got.Assigned()
			return func() Assignment { return fromPartitions(all) }, nil
		}
	}}
}

func fromPartitions(got map[string][]rebalance.Partition) Assignment {
	out := make(Assignment, len(got))
	for m, ps := range got {
		byTopic := make(map[string][]int32)
		for _, p := range ps {
			byTopic[p.Topic] = append(byTopic[p.Topic], p.ID)
		}
		out[m] = byTopic
	}
	return out
}

// franz drives a franz-go GroupBalancer the way its group leader does:
// members' JoinGroup metadata (with their previous partitions, for the
// sticky ones) into MemberBalancer, then Balance. The timed part ends at
// the balance plan; reading it back into an Assignment is not timed.
func franz(g kgo.GroupBalancer, name string) Assignor {
	sticky := g.ProtocolName() != "range" && g.ProtocolName() != "roundrobin"
	return Assignor{Name: name, Sticky: sticky, Prepare: func(in Input) func() (Result, error) {
		topics := slices.Sorted(mapsKeys(in.Topics))
		members := make([]kmsg.JoinGroupResponseMember, 0, len(in.Members))
		for _, m := range slices.Sorted(slices.Values(in.Members)) {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = m
			jm.ProtocolMetadata = g.JoinGroupMetadata(slices.Clone(topics), in.Prev[m], 1)
			members = append(members, jm)
		}
		return func() (Result, error) {
			mb, _, err := g.MemberBalancer(members)
			if err != nil {
				return nil, err
			}
			var plan kgo.IntoSyncAssignment
			if be, ok := mb.(kgo.GroupMemberBalancerOrError); ok {
				if plan, err = be.BalanceOrError(in.Topics); err != nil {
					return nil, err
				}
			} else {
				plan = mb.Balance(in.Topics)
			}
			return func() Assignment { return decodeFranz(g, plan) }, nil
		}
	}}
}

// decodeFranz turns a franz-go plan into an Assignment: a *kgo.BalancePlan
// directly, any other plan from its SyncGroup bytes.
func decodeFranz(g kgo.GroupBalancer, plan kgo.IntoSyncAssignment) Assignment {
	if p, ok := plan.(*kgo.BalancePlan); ok {
		return Assignment(p.AsMemberIDMap())
	}
	out := make(Assignment)
	for _, a := range plan.IntoSyncAssignment() {
		m, err := g.ParseSyncAssignment(a.MemberAssignment)
		if err != nil {
			panic(err)
		}
		out[a.MemberID] = m
	}
	return out
}

// saramaAssignor drives a sarama BalanceStrategy's Plan with each member's
// metadata; the sticky one gets its previous partitions in UserData, as
// sarama's consumer group sends them.
func saramaAssignor(s sarama.BalanceStrategy, name string) Assignor {
	sticky := s.Name() == sarama.StickyBalanceStrategyName
	return Assignor{Name: name, Sticky: sticky, Prepare: func(in Input) func() (Result, error) {
		topicNames := slices.Sorted(mapsKeys(in.Topics))
		members := make(map[string]sarama.ConsumerGroupMemberMetadata, len(in.Members))
		for _, m := range in.Members {
			meta := sarama.ConsumerGroupMemberMetadata{Version: 1, Topics: topicNames}
			if sticky && in.Prev[m] != nil {
				data, err := s.AssignmentData(m, in.Prev[m], 1)
				if err != nil {
					panic(err)
				}
				meta.UserData = data
			}
			members[m] = meta
		}
		topics := make(map[string][]int32, len(in.Topics))
		for t, n := range in.Topics {
			ids := make([]int32, n)
			for i := range ids {
				ids[i] = int32(i)
			}
			topics[t] = ids
		}
		return func() (Result, error) {
			plan, err := s.Plan(members, topics)
			return func() Assignment { return Assignment(plan) }, err
		}
	}}
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Partitions lists the partitions of topics, sorted.
func Partitions(topics map[string]int32) []rebalance.Partition {
	var ps []rebalance.Partition
	for t, n := range topics {
		for id := range n {
			ps = append(ps, rebalance.Partition{Topic: t, ID: id})
		}
	}
	rebalance.Sort(ps)
	return ps
}

// Case is one benchmark size.
type Case struct {
	Members, Partitions, Topics int
}

func (c Case) String() string { return fmt.Sprintf("%dx%d", c.Members, c.Partitions) }

// Cases are the sizes of issue 4: members x partitions over 10 topics.
var Cases = []Case{{10, 100, 10}, {100, 10_000, 10}, {1_000, 100_000, 10}}

// Shapes are other sizes, for a fresh assignment by Balanced and by
// franz-go's sticky balancer only: few members with many partitions, one
// topic or a few, many members with few partitions, and a million
// partitions. They show where Balanced is slower than franz-go, not only
// the cases where it was tuned.
var Shapes = []Case{
	{2, 100_000, 10}, {10, 100_000, 1}, {10, 1_000_000, 1_000},
	{50, 5_000, 1}, {100, 10_000, 1}, {200, 20_000, 1}, {500, 50_000, 1}, {1_000, 100_000, 1},
	{1_000, 1_000, 10}, {3_000, 1_000, 10}, {5_000, 5_000, 10},
	{200, 1_000_000, 1_000}, {1_000, 1_000_000, 1_000},
}

// Groups returns, for c, the members before and after a join and a leave
// and the topics; member names look like real consumer IDs and come from
// a fixed seed, so every run benchmarks the same inputs.
func Groups(c Case) (members, joined, left []string, topics map[string]int32) {
	r := rand.New(rand.NewPCG(uint64(c.Members), uint64(c.Partitions)))
	seen := make(map[string]bool)
	name := func() string {
		for {
			n := fmt.Sprintf("consumer-%016x", r.Uint64())
			if !seen[n] {
				seen[n] = true
				return n
			}
		}
	}
	for range c.Members {
		members = append(members, name())
	}
	slices.Sort(members)
	joined = append(slices.Clone(members), name())
	slices.Sort(joined)
	gone := r.IntN(len(members))
	left = slices.Delete(slices.Clone(members), gone, gone+1)
	topics = make(map[string]int32, c.Topics)
	for i := range c.Topics {
		topics[fmt.Sprintf("events-%02d", i)] = int32(c.Partitions / c.Topics)
	}
	return members, joined, left, topics
}

// ToPartitions converts an Assignment for rebalance.MinMoves and Moved.
func ToPartitions(a Assignment) map[string][]rebalance.Partition {
	out := make(map[string][]rebalance.Partition, len(a))
	for m, byTopic := range a {
		var ps []rebalance.Partition
		for t, ids := range byTopic {
			for _, id := range ids {
				ps = append(ps, rebalance.Partition{Topic: t, ID: id})
			}
		}
		rebalance.Sort(ps)
		out[m] = ps
	}
	return out
}

// Spread returns the largest minus the smallest number of partitions of a
// member of members in a.
func Spread(a Assignment, members []string) int {
	lo, hi := -1, 0
	for _, m := range members {
		n := 0
		for _, ids := range a[m] {
			n += len(ids)
		}
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return hi - max(lo, 0)
}
