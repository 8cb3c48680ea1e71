package partset

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/actor"
	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/internal/zksession"
)

// TestPublishComparesCorruptTopics: a view whose corrupt topics differ
// from the last one's, by name or by error, is published even when
// nothing else differs. (With real ZooKeeper any change also moves the
// zxid; the view is compared in full all the same.)
func TestPublishComparesCorruptTopics(t *testing.T) {
	t.Parallel()
	s := New(Config{
		Paths:   zkpath.Group{Root: "/zkalloc", Group: "g"},
		Session: actor.NewLatest[zksession.State](),
		ACL:     zk.WorldACL(zk.PermAll),
		Resync:  time.Minute,
		Logger:  slog.New(slog.DiscardHandler),
		Clock:   actor.RealClock(),
	})
	s.seed = nil // merged
	bad := func(why string) topicState { return topicState{mzxid: 7, err: errors.New(why)} }
	steps := []struct {
		name   string
		topics map[string]topicState
		want   bool // a view is published
	}{
		{"first view", map[string]topicState{"a": bad("x"), "t": {ids: []int32{1}, mzxid: 7}}, true},
		{"the same", map[string]topicState{"a": bad("x"), "t": {ids: []int32{1}, mzxid: 7}}, false},
		{"another error", map[string]topicState{"a": bad("y"), "t": {ids: []int32{1}, mzxid: 7}}, true},
		{"another topic", map[string]topicState{"b": bad("y"), "t": {ids: []int32{1}, mzxid: 7}}, true},
		{"the same again", map[string]topicState{"b": bad("y"), "t": {ids: []int32{1}, mzxid: 7}}, false},
	}
	for _, st := range steps {
		s.topics = st.topics
		s.publish(1)
		if got := s.out.Has(); got != st.want {
			t.Errorf("%s: published = %v, want %v", st.name, got, st.want)
		}
		s.out.Sent()
	}
}
