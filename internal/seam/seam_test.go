package seam_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/zkalloc/zkalloc/internal/seam"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRegisterLookup(t *testing.T) {
	t.Parallel()
	backend := func(seam.Config) seam.Actors { return seam.Actors{} }
	a, unregisterA := seam.Register("test", backend)
	b, unregisterB := seam.Register("test", backend)
	defer unregisterB()
	if a == b {
		t.Fatalf("two registrations share the name %q", a)
	}
	if _, ok := seam.Lookup([]string{a}); !ok {
		t.Errorf("Lookup(%q) finds nothing", a)
	}
	for _, servers := range [][]string{nil, {}, {a, b}, {"127.0.0.1:2181"}, {"test:backend-0"}} {
		if _, ok := seam.Lookup(servers); ok {
			t.Errorf("Lookup(%q) finds a backend", servers)
		}
	}
	unregisterA()
	if _, ok := seam.Lookup([]string{a}); ok {
		t.Errorf("Lookup(%q) finds the backend after unregister", a)
	}
	if _, ok := seam.Lookup([]string{b}); !ok {
		t.Errorf("Lookup(%q) lost the other backend", b)
	}
}
