package zkwatch_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zkwatch"
)

// fired returns a watch channel as the client leaves it once the watch
// has fired: its one event sent, then closed; taken says that another
// reader (a view's Outdated check) has taken the event already.
func fired(taken bool) <-chan zk.Event {
	ch := make(chan zk.Event, 1)
	ch <- zk.Event{Type: zk.EventNodeDataChanged, Path: "/a"}
	close(ch)
	if taken {
		<-ch
	}
	return ch
}

func TestSetForwardsFiredWatches(t *testing.T) {
	tests := []struct {
		name  string
		taken bool
		want  zk.EventType
	}{
		{"event", false, zk.EventNodeDataChanged},
		{"event taken by another reader", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := zkwatch.New()
			defer s.Close()
			s.Add("a", fired(tt.taken))
			select {
			case f := <-s.C():
				if f.Key != "a" || f.Event.Type != tt.want {
					t.Errorf("got %+v, want key a with event type %v", f, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the fired watch was not forwarded")
			}
		})
	}
}

func TestSetCloseTwice(t *testing.T) {
	s := zkwatch.New()
	s.Add("a", make(chan zk.Event))
	s.Close()
	s.Close()
}
