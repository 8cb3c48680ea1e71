package zkalloc_test

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// This file states the import policy of the module and checks it, after
// the standard library's go/build/deps_test.go: imports run one way, from
// the vocabulary and the strategies at the bottom to the tools at the
// top, and no import runs back up. docs/architecture.md draws the floors.
//
// policy lists every package of the module with what its production
// (non-test) code may import directly: "std" is the standard library,
// "zk" github.com/go-zookeeper/zk, "backoff" github.com/cenkalti/backoff/v4,
// "." the root package zkalloc, and other names are the module's
// packages, relative to its root. A package that is not listed, or an
// import that its entry does not allow, fails the test. Since every
// package is listed, what a package may reach through its imports
// follows; checks below also state the floors' rules on what each
// package reaches (go list's Deps), so that a failure names the rule.
var policy = []struct{ pkgs, may string }{
	// Floor 0: the vocabulary and the strategies (Partition, Strategy),
	// and the actor runtime. The standard library only.
	{"rebalance actor", "std"},

	// Floor 1: the vocabulary faces: session states, member and partition
	// views, the topic nodes' codec and limits, the agreed assignment
	// record's codec.
	{"session membership partitions assignment", "std rebalance"},

	// Floor 2: the member's decisions, pure: no actor, no ZooKeeper.
	{"internal/decision", "std rebalance session membership partitions"},

	// Helpers with no ZooKeeper client. internal/zklaunch runs a local
	// ZooKeeper server as a Java process, for the command's demo and as
	// the ground the test workshop builds its servers on.
	{"internal/inflight internal/zklaunch", "std"},
	{"internal/retry", "std actor backoff"},

	// Floor 3: the ZooKeeper helpers and the I/O actors, the only
	// packages of the library that import go-zookeeper.
	{"internal/zkpath internal/zkwatch", "std zk rebalance"},
	{"internal/zkservers", "std internal/zkpath"},
	{"internal/zksession", "std zk backoff actor session"},
	{"internal/ioloop", "std zk actor session internal/retry internal/zksession"},
	{"internal/members", "std zk actor rebalance session membership internal/zksession internal/ioloop internal/zkpath internal/inflight internal/zkwatch"},
	{"internal/partset", "std zk actor rebalance session partitions internal/zksession internal/ioloop internal/zkpath internal/zkwatch internal/inflight"},
	// The claims actor takes the core's Want and answers with its Held,
	// which the core defines, as raft's Ready lives with raft; it reads
	// a holder's member node with membership's Info.
	{"internal/claims", "std zk actor rebalance session membership internal/decision internal/zksession internal/ioloop internal/zkpath internal/zkwatch internal/inflight"},
	// The record actor reads and writes the sticky strategy's agreed
	// record (package assignment's codec) for the core's jobs.
	{"internal/record", "std zk backoff actor rebalance session membership assignment internal/decision internal/zksession internal/ioloop internal/retry internal/zkpath internal/zkwatch internal/inflight"},

	// Floor 4: the root wires the actors around the decisions. It
	// imports zk itself only for its public API: Config.ACL is []zk.ACL
	// and ErrNoAuth is zk.ErrNoAuth.
	{".", "std zk actor rebalance session membership partitions internal/decision internal/zksession internal/members internal/partset internal/claims internal/record internal/zkpath internal/zkservers internal/seam"},
	// The seam the root takes its actors through: their interfaces, in
	// the vocabulary and the decisions' messages, and the registry of
	// in-memory backends (zkalloctest's). It reaches no ZooKeeper, so
	// that an in-memory backend needs none.
	{"internal/seam", "std actor rebalance session membership partitions internal/decision"},

	// Floor 5: the tools.
	{"zkalloctest", "std . actor rebalance session membership partitions internal/decision internal/seam"},
	// The command reads and writes a group's nodes itself; its demo
	// starts a local ZooKeeper server with internal/zklaunch.
	{"cmd/zkalloc", "std zk . rebalance membership partitions assignment internal/partset internal/zkpath internal/zkservers internal/zkwatch internal/inflight internal/zklaunch"},
	// A real ZooKeeper for users' tests, standalone or an ensemble, on
	// the launcher; it imports testing, so nothing else imports it.
	{"zkserver", "std internal/zklaunch"},

	// The test workshop: internal/zktest (servers, ensembles and fault
	// proxies, on internal/zklaunch) and internal/actortest. Production
	// code never imports them (checked below). The history checker and
	// the ZooKeeper-backed suites that use it (chaos, cut leaders and
	// followers, scale, the process and convergence benchmarks) are the
	// integration module, integration/, a module of its own: nothing here
	// can import them.
	{"internal/zktest", "std zk internal/zklaunch"},
	{"internal/actortest", "std zk actor rebalance session internal/zksession"},

	// The build's own programs: scripts/modproxy writes the file-based
	// module proxy that make test installs the side modules from.
	{"scripts/modproxy", "std"},
}

const (
	modulePath  = "github.com/zkalloc/zkalloc"
	zkPath      = "github.com/go-zookeeper/zk"
	backoffPath = "github.com/cenkalti/backoff/v4"
)

// workshop is the test workshop: harnesses that production code never
// depends on.
var workshop = []string{"internal/zktest", "internal/actortest"}

// listed is one package as go list describes it.
type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// listModule returns every package of the module and every package they
// depend on, by import path, as `go list -deps ./...` gives them.
func listModule(t *testing.T) map[string]listed {
	t.Helper()
	// go test puts GOROOT/bin first in the PATH of the tests it runs.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", "-json=ImportPath,Standard,Imports,Deps", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := make(map[string]listed)
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// short names an import path as the policy does.
func short(path string) string {
	switch {
	case path == modulePath:
		return "."
	case path == zkPath:
		return "zk"
	case path == backoffPath:
		return "backoff"
	}
	return strings.TrimPrefix(path, modulePath+"/")
}

func inModule(path string) bool {
	return path == modulePath || strings.HasPrefix(path, modulePath+"/")
}

func TestDependencies(t *testing.T) {
	t.Parallel()
	pkgs := listModule(t)
	may := make(map[string][]string) // by short name
	for _, r := range policy {
		for _, p := range strings.Fields(r.pkgs) {
			if _, dup := may[p]; dup {
				t.Errorf("policy lists %s twice", p)
			}
			may[p] = strings.Fields(r.may)
		}
	}
	// allowed reports whether a package whose entry is allow may import
	// path.
	allowed := func(allow []string, path string) bool {
		if p, ok := pkgs[path]; ok && p.Standard {
			return slices.Contains(allow, "std")
		}
		return slices.Contains(allow, short(path))
	}

	var module []string
	for path := range pkgs {
		if inModule(path) {
			module = append(module, path)
		}
	}
	slices.Sort(module)
	for _, path := range module {
		name := short(path)
		allow, ok := may[name]
		if !ok {
			t.Errorf("%s is not in the policy of deps_test.go: add it to its floor", name)
			continue
		}
		for _, imp := range pkgs[path].Imports {
			if !allowed(allow, imp) {
				t.Errorf("%s imports %s, which its entry in the policy does not allow", name, short(imp))
			}
		}
	}
	for name := range may {
		if _, ok := pkgs[modulePath+"/"+name]; !ok && name != "." {
			t.Errorf("the policy lists %s, which is not a package of the module", name)
		}
	}

	// The rules of the floors, on everything each package reaches.
	reaches := func(name string, ok func(dep string) bool, rule string) {
		t.Helper()
		path := modulePath + "/" + name
		for _, dep := range pkgs[path].Deps {
			if !ok(dep) {
				t.Errorf("%s reaches %s: %s", name, short(dep), rule)
			}
		}
	}
	std := func(dep string) bool { return pkgs[dep].Standard }
	oneOf := func(names ...string) func(string) bool {
		return func(dep string) bool { return std(dep) || slices.Contains(names, short(dep)) }
	}
	for _, name := range []string{"rebalance", "actor"} {
		reaches(name, std, "the vocabulary, the strategies and the actor runtime use only the standard library")
	}
	for _, name := range []string{"session", "membership", "partitions", "assignment"} {
		reaches(name, oneOf("rebalance"), "the faces use only the standard library and rebalance")
	}
	reaches("internal/decision", oneOf("rebalance", "session", "membership", "partitions"),
		"the decisions use only the standard library, rebalance and the faces: never go-zookeeper, backoff, actor or an I/O package")
	reaches("internal/seam", oneOf("actor", "rebalance", "session", "membership", "partitions", "internal/decision"),
		"the seam uses only the runtime, the vocabulary and the decisions: never go-zookeeper or an I/O actor")
	for _, path := range module {
		name := short(path)
		if slices.Contains(workshop, name) {
			continue
		}
		for _, dep := range pkgs[path].Deps {
			if slices.Contains(workshop, short(dep)) {
				t.Errorf("%s reaches %s: production code never depends on the test workshop", name, short(dep))
			}
			if short(dep) == "zkalloctest" || short(dep) == "zkserver" || strings.HasPrefix(short(dep), "cmd/") {
				t.Errorf("%s reaches %s: nothing depends on the tools", name, short(dep))
			}
		}
	}
}

// The custom-strategy example is what a user copies to write a strategy:
// it needs the root and rebalance, nothing else of the module.
func TestCustomStrategyExampleImports(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "example_strategy_test.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if inModule(path) && path != modulePath && path != modulePath+"/rebalance" {
			t.Errorf("example_strategy_test.go imports %s: the custom-strategy example imports only the root and rebalance", short(path))
		}
	}
}
