package rebalance_test

import (
	"errors"
	"testing"

	"github.com/zkalloc/zkalloc/rebalance"
)

// Placement.Validate refuses what a record read back from storage could
// hold and Placement forbids, and accepts Sticky's own output.
func TestPlacementValidate(t *testing.T) {
	t.Parallel()
	p := func(topic string, id int32) rebalance.Partition { return rebalance.Partition{Topic: topic, ID: id} }
	good := rebalance.Placement{Names: []string{"a", "b"}, Parts: []rebalance.Partition{p("t", 0), p("t", 1)}, Owner: []int32{0, 1}}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", good, err)
	}
	res, err := rebalance.Sticky(rebalance.Placement{}, []rebalance.Member{{Name: "a", Weight: 1}}, []rebalance.Partition{p("t", 0), p("u", 3)})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Next.Validate(); err != nil {
		t.Errorf("Validate of Sticky's placement = %v", err)
	}
	for name, pl := range map[string]rebalance.Placement{
		"unsorted":       {Names: []string{"a"}, Parts: []rebalance.Partition{p("t", 1), p("t", 0)}, Owner: []int32{0, 0}},
		"duplicate":      {Names: []string{"a"}, Parts: []rebalance.Partition{p("t", 1), p("t", 1)}, Owner: []int32{0, 0}},
		"negative ID":    {Names: []string{"a"}, Parts: []rebalance.Partition{p("t", -1)}, Owner: []int32{0}},
		"bad topic":      {Names: []string{"a"}, Parts: []rebalance.Partition{p("t:1", 0)}, Owner: []int32{0}},
		"owner range":    {Names: []string{"a"}, Parts: []rebalance.Partition{p("t", 0)}, Owner: []int32{1}},
		"short owners":   {Names: []string{"a"}, Parts: []rebalance.Partition{p("t", 0)}},
		"name twice":     {Names: []string{"a", "a"}, Parts: []rebalance.Partition{p("t", 0)}, Owner: []int32{0}},
		"home out range": {Names: []string{"a"}, Parts: []rebalance.Partition{p("t", 0)}, Owner: []int32{0}, Home: []int32{2}},
	} {
		if err := pl.Validate(); !errors.Is(err, rebalance.ErrInvalid) {
			t.Errorf("%s: Validate(%+v) = %v, want ErrInvalid", name, pl, err)
		}
	}
}
