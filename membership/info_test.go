package membership_test

import (
	"strings"
	"testing"

	"github.com/zkalloc/zkalloc/membership"
)

func TestInfoRoundTrip(t *testing.T) {
	t.Parallel()
	want := membership.ThisProcess("balanced")
	if want.Host == "" || want.PID == 0 || want.Started == "" || !strings.HasPrefix(want.Version, "zkalloc/") || want.Version == "zkalloc/unknown" {
		t.Fatalf("ThisProcess = %+v, want every field set", want)
	}
	got, ok := membership.ParseInfo(want.Data())
	if !ok || got != want {
		t.Fatalf("ParseInfo(Data()) = %+v, %v; want %+v", got, ok, want)
	}
	tests := []struct {
		data     string
		ok       bool
		strategy string
	}{
		{`{"host":"h","pid":1,"started":"2026-01-01T00:00:00Z","version":"zkalloc/1"}`, true, ""}, // an older version
		{`{"strategy":"range"}`, true, "range"},
		{`not json`, false, ""},
		{``, false, ""},
	}
	for _, tt := range tests {
		got, ok := membership.ParseInfo([]byte(tt.data))
		if ok != tt.ok || got.Strategy != tt.strategy {
			t.Errorf("ParseInfo(%q) = %+v, %v; want strategy %q, %v", tt.data, got, ok, tt.strategy, tt.ok)
		}
	}
}
