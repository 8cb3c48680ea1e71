package partset

import (
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestPlanTopicNeverDeletes: a removal that empties a topic sets its node
// to no data at the version read, and never deletes it, so that the node
// keeps one version history (issue 24: a node deleted and created again
// starts at version 0, which a writer that read the old node can match).
// An emptied node is a topic with no IDs: adding to it sets its data,
// removing from it does nothing.
func TestPlanTopicNeverDeletes(t *testing.T) {
	t.Parallel()
	const path = "/g/partitions/t"
	node := func(data string, version int32) topicRead {
		return topicRead{data: []byte(data), stat: &zk.Stat{Version: version}, exists: true}
	}
	tests := []struct {
		name   string
		read   topicRead
		remove bool
		change []int32
		want   string // the operation, printed; "<nil>" for none
	}{
		{"removal empties the topic", node("0,7", 3), true, []int32{0, 7}, "set [] at 3"},
		{"removal of more than there is", node("0", 1), true, []int32{0, 5}, "set [] at 1"},
		{"removal from an emptied topic", node("", 4), true, []int32{0}, "<nil>"},
		{"addition to an emptied topic", node("", 4), false, []int32{5}, "set [53] at 4"},
		{"addition to a missing topic", topicRead{}, false, []int32{5}, "create [53]"},
		{"removal from a missing topic", topicRead{}, true, []int32{5}, "<nil>"},
	}
	for _, tt := range tests {
		op, err := planTopic(tt.read, path, nil, tt.remove, tt.change)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got := "<nil>"
		switch op := op.(type) {
		case *zk.SetDataRequest:
			got = fmt.Sprintf("set %v at %d", op.Data, op.Version)
		case *zk.CreateRequest:
			got = fmt.Sprintf("create %v", op.Data)
		case nil:
		default:
			got = fmt.Sprintf("%T", op)
		}
		if got != tt.want {
			t.Errorf("%s: planned %s, want %s", tt.name, got, tt.want)
		}
	}
}
