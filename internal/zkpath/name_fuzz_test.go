package zkpath_test

import (
	"errors"
	"path"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/zkalloc/zkalloc/internal/zkpath"
	"github.com/zkalloc/zkalloc/rebalance"
)

// zooKeeperRefuses mirrors the server's check of a path
// (org.apache.zookeeper.common.PathUtils.validatePath), which works on
// UTF-16 code units; it returns why the server would refuse p, or "".
func zooKeeperRefuses(p string) string {
	if p == "" || p[0] != '/' {
		return "not absolute"
	}
	if len(p) == 1 {
		return ""
	}
	if p[len(p)-1] == '/' {
		return "trailing slash"
	}
	chars := utf16.Encode([]rune(p))
	last := uint16('/')
	for i := 1; i < len(chars); last, i = chars[i], i+1 {
		c := chars[i]
		atEnd := i+1 == len(chars) || chars[i+1] == '/'
		switch {
		case c == 0:
			return "null character"
		case c == '/' && last == '/':
			return "empty node name"
		case c == '.' && last == '.' && chars[i-2] == '/' && atEnd:
			return "relative path (..)"
		case c == '.' && last == '/' && atEnd:
			return "relative path (.)"
		case c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			return "invalid character"
		}
	}
	return ""
}

// FuzzValidateName checks every name ValidateName accepts against what
// the paths built from it must be: a name read from ZooKeeper (a member
// node's name, a claim's data naming its owner) is joined to a parent to
// read another node, so it must name exactly one child of that parent
// (path.Dir and path.Base give the parent and the name back, path.Clean
// changes nothing) and the server must accept the path. Refusals wrap
// rebalance.ErrInvalid.
func FuzzValidateName(f *testing.F) {
	for _, seed := range []string{
		"a", "member-1", "a:b", "ünï", "with space", "...", ".a", "a.", "\u4e2d\u6587", "\uffef",
		"", ".", "..", "a/b", "/", "a\x00", "a\nb", "\x7f", "\u0085", "a\u00a0b", "\ufeff", "\ue000",
		"\uf8ff", "\ufff0", "\uffff", "\U00010000", "\U0001F600", "\xff", "\xed\xa0\x80",
		strings.Repeat("x", rebalance.MaxNameLen+1),
	} {
		f.Add(seed)
	}
	g := zkpath.Group{Root: "/zkalloc", Group: "g"}
	f.Fuzz(func(t *testing.T, name string) {
		if err := rebalance.ValidateName(name); err != nil {
			if !errors.Is(err, rebalance.ErrInvalid) {
				t.Fatalf("ValidateName(%q) = %v, want an ErrInvalid error", name, err)
			}
			return
		}
		p := g.Member(name)
		if dir, base := path.Dir(p), path.Base(p); dir != g.Members() || base != name {
			t.Fatalf("ValidateName accepts %q, but %q splits into %q and %q", name, p, dir, base)
		}
		if clean := path.Clean(p); clean != p {
			t.Fatalf("ValidateName accepts %q, but %q cleans to %q", name, p, clean)
		}
		if why := zooKeeperRefuses(p); why != "" {
			t.Fatalf("ValidateName accepts %q, but ZooKeeper refuses %q: %s", name, p, why)
		}
		if err := zkpath.ValidateRoot("/" + name); err != nil && name != "zookeeper" {
			t.Fatalf("ValidateName accepts %q, but ValidateRoot refuses %q: %v", name, "/"+name, err)
		}
	})
}
