package membership_test

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/zkalloc/zkalloc/membership"
)

// FuzzParseInfo feeds ParseInfo arbitrary member node data, as a foreign
// client could write it. It must not panic; what it accepts must be the
// JSON of an Info, so a JSON object (ParseInfo's doc: ok is false for
// anything else), and the Info it returns must survive Data then
// ParseInfo unchanged.
func FuzzParseInfo(f *testing.F) {
	for _, seed := range []string{
		`{"host":"h","pid":1,"started":"2026-01-01T00:00:00Z","version":"zkalloc/v1.0.0","strategy":"balanced"}`,
		`{"host":"h","pid":1,"started":"2026-01-01T00:00:00Z","version":"zkalloc/1"}`,
		`{"strategy":"range"}`, `{}`, ` {"HOST":"h","host":"i","extra":[1,{}]} `,
		`{"pid":1.5}`, `{"pid":99999999999999999999}`, `{"host":"\ud800\u00e9\"\\"}`,
		`not json`, ``, `[]`, `"h"`, `0`, "{\"host\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		i, ok := membership.ParseInfo(data)
		if !ok {
			if i != (membership.Info{}) {
				t.Fatalf("ParseInfo(%q) = %+v, false; want the zero Info with false", data, i)
			}
			return
		}
		if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
			t.Fatalf("ParseInfo(%q) = %+v, true for data that is not a JSON object", data, i)
		}
		again, ok := membership.ParseInfo(i.Data())
		if !ok || again != i {
			t.Fatalf("ParseInfo(%q) = %+v, but ParseInfo(Data()) = %+v, %v", data, i, again, ok)
		}
	})
}

// FuzzInfoData checks that ParseInfo reads back every Info that Data
// writes. An Info's strings come from os.Hostname, time and build
// information: valid UTF-8, which JSON keeps intact. Other strings come
// back with U+FFFD in place of their bad bytes, but must still parse.
func FuzzInfoData(f *testing.F) {
	f.Add("host-1", 4242, "2026-01-01T00:00:00Z", "zkalloc/v1.2.0", "balanced")
	f.Add("", 0, "", "", "")
	f.Add("h\"\\\n<>&\u2028", -1, "\x00", "zkalloc/(devel) => ../x v0.0.0", "ünï")
	f.Add("\xff", 1<<62, "\ud7ff", "\U0001F600", "\xed\xa0\x80")
	f.Fuzz(func(t *testing.T, host string, pid int, started, version, strategy string) {
		want := membership.Info{Host: host, PID: pid, Started: started, Version: version, Strategy: strategy}
		data := want.Data()
		got, ok := membership.ParseInfo(data)
		if !ok {
			t.Fatalf("ParseInfo(%q) = false for the Data of %+v", data, want)
		}
		valid := true
		for _, s := range []string{host, started, version, strategy} {
			valid = valid && utf8.ValidString(s)
		}
		if valid && got != want {
			t.Fatalf("ParseInfo(Data()) = %+v, want %+v (data %q)", got, want, data)
		}
		if !valid && got.PID != want.PID {
			t.Fatalf("ParseInfo(Data()) = %+v, want PID %d (data %q)", got, want.PID, data)
		}
	})
}
