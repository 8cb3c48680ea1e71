package zkalloc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/actortest"
)

// TestAuthGroupRefusesOutsiders runs a group with digest credentials and
// the default ACL, and checks from outside, without credentials, that
// every node of the group can be read but not overwritten, deleted or
// created under (each attempt answered NoAuth); that a member with the
// wrong password stops at Start with an error naming NoAuth and the path,
// without waiting for its context; and that a member with the right ones
// joins.
func TestAuthGroupRefusesOutsiders(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	auth := []zkalloc.Auth{{Scheme: "digest", Credentials: []byte("alice:secret")}}
	cfg := c.config("a", map[string][]int32{"t": ids(4)})
	cfg.Auth = auth
	c.start(cfg)
	c.waitConverged(actortest.PartsN("t", 4))

	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	dir := "/zkalloc/groups/" + c.group
	nodes := []string{"/zkalloc", "/zkalloc/groups", dir, dir + "/members", dir + "/members/a", dir + "/partitions", dir + "/partitions/t", dir + "/owners", dir + "/owners/t:0"}
	for _, p := range nodes {
		data, _, err := obs.Get(p)
		if err != nil {
			t.Errorf("outsider Get(%s) = %v; want it readable", p, err)
		}
		if _, err := obs.Set(p, []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("outsider Set(%s) = %v; want NoAuth", p, err)
		}
		if _, err := obs.Create(p+"/x", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("outsider Create(%s/x) = %v; want NoAuth", p, err)
		}
		if p == "/zkalloc" {
			continue // deleting it is up to the ACL of "/", not ours
		}
		if err := obs.Delete(p, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("outsider Delete(%s) = %v; want NoAuth", p, err)
		}
		if p == dir+"/partitions/t" && string(data) != "0-3" {
			t.Errorf("outsider reads %s = %q, want 0-3", p, data)
		}
	}
	// Taking a partition's claim or a member's place is a create too.
	if _, err := obs.Create(dir+"/owners/t:9", []byte("mallory"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("outsider creating a claim: %v; want NoAuth", err)
	}

	wrong := c.config("w", nil)
	wrong.Auth = []zkalloc.Auth{{Scheme: "digest", Credentials: []byte("alice:wrong")}}
	began := time.Now()
	_, err := c.tryStart(wrong)
	switch {
	case !errors.Is(err, zkalloc.ErrNoAuth):
		t.Fatalf("Start with the wrong password = %v; want an error wrapping ErrNoAuth", err)
	case !strings.Contains(err.Error(), "NoAuth") || !strings.Contains(err.Error(), dir+"/"):
		// The first node it makes: a sticky member makes the parents of
		// what it lists (seats/, drained/) before its own node.
		t.Errorf("Start with the wrong password = %q; want it to name NoAuth and a node under %s", err, dir)
	case time.Since(began) > testTimeout/2:
		t.Errorf("Start with the wrong password took %v; want the refusal at once, not retried", time.Since(began))
	}
	t.Logf("Start with the wrong password: %v", err)
	if ok, _, err := obs.Exists(dir + "/members/w"); err != nil || ok {
		t.Errorf("Exists(members/w) = %v, %v; want no node for the refused member", ok, err)
	}

	right := c.config("b", nil)
	right.Auth = auth
	c.start(right)
	c.waitConverged(actortest.PartsN("t", 4))
}

// TestACLGivenIsUsed gives an ACL of its own (every permission for one
// digest identity, nothing for anyone else) and checks that the group's
// nodes carry exactly it.
func TestACLGivenIsUsed(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	cfg := c.config("a", map[string][]int32{"t": ids(2)})
	cfg.Root = "/acl"
	cfg.Auth = []zkalloc.Auth{{Scheme: "digest", Credentials: []byte("bob:pw")}}
	cfg.ACL = zk.DigestACL(zk.PermAll, "bob", "pw")
	c.start(cfg)
	c.waitConverged(actortest.PartsN("t", 2))

	obs := actortest.Observe(t, []string{srv.Addr()}, testTimeout).Conn
	bob := rawConn(t, srv.Addr())
	if err := bob.AddAuth("digest", []byte("bob:pw")); err != nil {
		t.Fatal(err)
	}
	dir := "/acl/groups/" + c.group
	for _, p := range []string{"/acl", dir, dir + "/members/a", dir + "/partitions/t", dir + "/owners/t:1"} {
		acl, _, err := bob.GetACL(p)
		if err != nil || len(acl) != 1 || acl[0] != cfg.ACL[0] {
			t.Errorf("GetACL(%s) = %v, %v; want %v", p, acl, err, cfg.ACL)
		}
		if _, _, err := obs.Get(p); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("outsider Get(%s) = %v; want NoAuth", p, err)
		}
	}
}

// TestAuthRefusedByServer gives credentials of a scheme the server does
// not know: Start fails at once with an error naming AuthFailed.
func TestAuthRefusedByServer(t *testing.T) {
	t.Parallel()
	srv := server(t)
	c := newCluster(t, []string{srv.Addr()})
	cfg := c.config("a", nil)
	cfg.Auth = []zkalloc.Auth{{Scheme: "nosuchscheme", Credentials: []byte("x")}}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	alloc, err := zkalloc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = alloc.Start(ctx)
	if err == nil || !errors.Is(err, zk.ErrAuthFailed) || !strings.Contains(err.Error(), "AuthFailed") || ctx.Err() != nil {
		t.Errorf("Start with an unknown scheme = %v; want an error naming AuthFailed before the deadline", err)
	}
	if cerr := alloc.Close(); !errors.Is(cerr, zk.ErrAuthFailed) {
		t.Errorf("Close = %v; want the AuthFailed error", cerr)
	}
}

// rawConn returns a plain client of the test's own, for calls the
// session's Conn does not have; it is closed when the test
// ends.
func rawConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(discardZK{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

type discardZK struct{}

func (discardZK) Printf(string, ...any) {}

// TestNewRejectsBadAuthAndACL: New checks Auth and ACL, naming the field
// and the element, and accepts the usual forms.
func TestNewRejectsBadAuthAndACL(t *testing.T) {
	t.Parallel()
	good := zkalloc.Config{Servers: []string{"127.0.0.1:2181"}, Group: "g", Member: "m"}
	digest := []zkalloc.Auth{{Scheme: "digest", Credentials: []byte("u:p")}}
	tests := []struct {
		name  string
		auth  []zkalloc.Auth
		acl   []zk.ACL
		field string // "" if New must accept it
	}{
		{"digest", digest, nil, ""},
		{"digest with an ACL of its own", digest, zk.DigestACL(zk.PermAll, "u", "p"), ""},
		{"world ACL without auth", nil, zk.WorldACL(zk.PermAll), ""},
		{"ip ACL", nil, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "10.0.0.0/8"}}, ""},
		{"empty scheme", []zkalloc.Auth{{Credentials: []byte("u:p")}}, nil, "Auth[0]"},
		{"scheme with a space", []zkalloc.Auth{{Scheme: "dig est", Credentials: []byte("u:p")}}, nil, "Auth[0]"},
		{"empty credentials", []zkalloc.Auth{{Scheme: "digest"}}, nil, "Auth[0]"},
		{"digest without a colon", []zkalloc.Auth{{Scheme: "digest", Credentials: []byte("up")}}, nil, "Auth[0]"},
		{"digest without a user", []zkalloc.Auth{{Scheme: "digest", Credentials: []byte(":p")}}, nil, "Auth[0]"},
		{"world as credentials", []zkalloc.Auth{{Scheme: "world", Credentials: []byte("anyone")}}, nil, "Auth[0]"},
		{"second one bad", append(digest, zkalloc.Auth{Scheme: "auth", Credentials: []byte("x")}), nil, "Auth[1]"},
		{"auth ACL without Auth", nil, zk.AuthACL(zk.PermAll), "ACL[0]"},
		{"no permissions", nil, []zk.ACL{{Perms: 0, Scheme: "world", ID: "anyone"}}, "ACL[0]"},
		{"unknown permission bit", nil, []zk.ACL{{Perms: 0x40 | zk.PermAll, Scheme: "world", ID: "anyone"}}, "ACL[0]"},
		{"world other than anyone", nil, []zk.ACL{{Perms: zk.PermAll, Scheme: "world", ID: "me"}}, "ACL[0]"},
		{"digest ID without hash", digest, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "u"}}, "ACL[0]"},
		{"empty ACL scheme", nil, []zk.ACL{{Perms: zk.PermAll, ID: "x"}}, "ACL[0]"},
		{"read only", nil, zk.WorldACL(zk.PermRead), "ACL: no entry grants write, create, delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			cfg.Auth, cfg.ACL = tt.auth, tt.acl
			_, err := zkalloc.New(cfg)
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("New() = %v, want it accepted", err)
			case tt.field == "":
			case !errors.Is(err, zkalloc.ErrInvalidConfig):
				t.Fatalf("New() = %v, want ErrInvalidConfig", err)
			case !strings.Contains(err.Error(), tt.field):
				t.Errorf("New() = %q, want %s named", err, tt.field)
			}
		})
	}
}
