package zktest

import (
	"maps"
	"testing"
)

func TestParseEphemerals(t *testing.T) {
	reply := "SessionTracker dump:\nSession Sets (1)/(1):\n1 expire at Wed Dec 02 15:30:52 UTC 2026:\n\t0x100004c6cc10000\n" +
		"ephemeral nodes dump:\nSessions with Ephemerals (2):\n0x100004c6cc10000:\n\t/e1\n\t/a/e2\n0x2a:\n\t/e3\n" +
		"Connections dump:\nConnections Sets (1)/(2):\n2 expire at Wed Dec 02 15:30:59 UTC 2026:\n\tip: /127.0.0.1:60994 sessionId: 0x100004c6cc10000\n"
	got, err := parseEphemerals(reply)
	want := map[string]int64{"/e1": 0x100004c6cc10000, "/a/e2": 0x100004c6cc10000, "/e3": 0x2a}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("parseEphemerals = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"This ZooKeeper instance is not currently serving requests\n", "Sessions with Ephemerals (1):\n\t/e1\n", "Sessions with Ephemerals (1):\n0xzz:\n"} {
		if got, err := parseEphemerals(bad); err == nil {
			t.Errorf("parseEphemerals(%q) = %v, want an error", bad, got)
		}
	}
}
