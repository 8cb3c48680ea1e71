package rebalance

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen is the longest group, member or topic name accepted, in
// bytes: Kafka's limit on topic names. ZooKeeper itself has none short of
// its packet size, but every member reads every other's name in one reply,
// so names must stay small. [ValidateName] does not check it; the callers
// that bound a name do.
const MaxNameLen = 249

// ValidateName checks that name can be one ZooKeeper node name: not empty,
// valid UTF-8, without '/', made of printable characters only (no control,
// format, private-use or unassigned characters, none of U+FFF0 to U+FFFF:
// ZooKeeper rejects some and the rest would hide in logs), none beyond
// U+FFFF (ZooKeeper checks paths as UTF-16 and refuses the surrogates such
// a character becomes, emoji included), and not "." or "..". Groups and
// members obey it; topics obey the narrower [ValidateTopic].
func ValidateName(name string) error {
	switch name {
	case "":
		return fmt.Errorf("%w name: empty", ErrInvalid)
	case ".", "..":
		return fmt.Errorf("%w name %q: reserved", ErrInvalid, name)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w name %q: not valid UTF-8", ErrInvalid, name)
	}
	for _, r := range name {
		switch {
		case r == '/':
			return fmt.Errorf("%w name %q: contains '/'", ErrInvalid, name)
		case !unicode.IsPrint(r) || r >= 0xFFF0 && r <= 0xFFFF:
			return fmt.Errorf("%w name %q: contains control or invisible character %U", ErrInvalid, name, r)
		case r > 0xFFFF:
			return fmt.Errorf("%w name %q: contains %U, beyond U+FFFF, which ZooKeeper refuses", ErrInvalid, name, r)
		}
	}
	return nil
}
