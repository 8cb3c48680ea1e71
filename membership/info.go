package membership

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime/debug"
	"time"
)

// Info is what a member's node says about the process that runs it, as
// JSON. Older versions wrote no Strategy.
type Info struct {
	Host     string `json:"host"`
	PID      int    `json:"pid"`
	Started  string `json:"started"` // RFC 3339, UTC
	Version  string `json:"version"`
	Strategy string `json:"strategy"` // the name of the member's rebalance strategy
	// Weight is the member's Config.Weight, for the sticky strategy's
	// shares; 0 (absent, from an older version or a stateless strategy)
	// means 1. See [Info.EffectiveWeight].
	Weight int `json:"weight,omitempty"`
}

// ThisProcess returns the Info of the calling process, started now, for
// a member running the named strategy.
func ThisProcess(strategy string) Info {
	host, _ := os.Hostname()
	return Info{Host: host, PID: os.Getpid(), Started: time.Now().UTC().Format(time.RFC3339), Version: Version(), Strategy: strategy}
}

// modulePath is zkalloc's module, whose version [Version] reports.
const modulePath = "github.com/zkalloc/zkalloc"

// Version returns "zkalloc/" and the version of the zkalloc module built
// into this program, as the go command recorded it ("v1.2.0", a
// pseudo-version, or "(devel)" when zkalloc itself is the main module),
// or "zkalloc/unknown" without build information.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "zkalloc/unknown"
	}
	if bi.Main.Path == modulePath {
		return "zkalloc/" + bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			if d.Replace != nil {
				return "zkalloc/" + d.Version + " => " + d.Replace.Path + " " + d.Replace.Version
			}
			return "zkalloc/" + d.Version
		}
	}
	return "zkalloc/unknown"
}

// EffectiveWeight is i's weight, 1 if unset.
func (i Info) EffectiveWeight() int {
	if i.Weight <= 0 {
		return 1
	}
	return i.Weight
}

// Data encodes i for a member node.
func (i Info) Data() []byte {
	b, _ := json.Marshal(i) // cannot fail: strings and an int
	return b
}

// ParseInfo decodes a member node's data; ok is false, with the zero
// Info, if it is not the JSON of an Info (a node written by something
// else).
func ParseInfo(data []byte) (i Info, ok bool) {
	// json.Unmarshal takes a JSON null as "leave i alone" without an
	// error, so only an object is let through; and on a field of the
	// wrong type it fills the fields before it and then fails.
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return Info{}, false
	}
	if json.Unmarshal(data, &i) != nil {
		return Info{}, false
	}
	return i, true
}
