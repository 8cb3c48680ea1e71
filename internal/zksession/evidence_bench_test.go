package zksession_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkalloc/zkalloc/internal/zktest"
)

// BenchmarkLeaseEvidence measures what each kind of lease evidence costs
// on a 3-node loopback ensemble (tick 500 ms): the latency of a sync, of
// a multi that only checks a node's version (the quorum lease's request,
// see lease.go), of the same check on a missing node, and of a setData
// for comparison, each sent to the leader and to a follower; and, per
// request, how much the ensemble's last zxid grows (a transaction
// committed) and how many bytes the servers append to their transaction
// logs, all three together.
//
//	go test -run XXX -bench LeaseEvidence -benchtime 500x ./session
func BenchmarkLeaseEvidence(b *testing.B) {
	dir := b.TempDir()
	e := zktest.NewEnsemble(b, 3, zktest.Options{Dir: dir})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := e.Leader(ctx)
	if err != nil {
		b.Fatal(err)
	}
	addrs := e.Addrs()
	setup, _, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		b.Fatal(err)
	}
	defer setup.Close()
	if _, err := setup.Create("/group", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	kinds := []struct {
		name string
		do   func(c *zk.Conn) error
	}{
		{"sync", func(c *zk.Conn) error { _, err := c.Sync("/group"); return err }},
		{"check", func(c *zk.Conn) error { return check(c, "/group") }},
		{"check-missing", func(c *zk.Conn) error {
			if err := check(c, "/missing"); err != zk.ErrNoNode {
				return fmt.Errorf("check of a missing node: %v, want %v", err, zk.ErrNoNode)
			}
			return nil
		}},
		{"set", func(c *zk.Conn) error { _, err := c.Set("/group", nil, -1); return err }},
	}
	for _, where := range []struct {
		name string
		i    int
	}{{"leader", leader}, {"follower", (leader + 1) % 3}} {
		conn, _, err := zk.Connect(addrs[where.i:where.i+1], 10*time.Second, zk.WithLogger(quiet{}))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Sync("/"); err != nil { // connected
			b.Fatal(err)
		}
		for _, kind := range kinds {
			b.Run(where.name+"/"+kind.name, func(b *testing.B) {
				zxid0, logged0 := lastZxid(b, ctx, addrs[leader]), logBytes(b, dir)
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					if err := kind.do(conn); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				zxid1, logged1 := lastZxid(b, ctx, addrs[leader]), logBytes(b, dir)
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(zxid1-zxid0)/float64(b.N), "zxids/op")
				b.ReportMetric(float64(logged1-logged0)/float64(b.N), "logB/op")
			})
		}
	}
}

// check sends a multi that only checks path's version, as the quorum
// lease does, and returns its error or the check's.
func check(c *zk.Conn, path string) error {
	res, err := c.Multi(&zk.CheckVersionRequest{Path: path, Version: -1})
	if err == nil && len(res) == 1 {
		err = res[0].Error
	}
	return err
}

// lastZxid reads the zxid the server at addr last processed, from srvr.
func lastZxid(tb testing.TB, ctx context.Context, addr string) int64 {
	tb.Helper()
	reply, err := zktest.FourLetter(ctx, addr, "srvr")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(reply, "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatalf("no Zxid in srvr's reply %q", reply)
	return 0
}

// logBytes sums, over the servers' transaction logs under dir, the bytes
// written: the servers preallocate the files with zeros, so it counts up
// to the last byte that is not zero.
func logBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*", "*", "data", "version-2", "log.*"))
	if err != nil || len(logs) == 0 {
		tb.Fatalf("transaction logs under %s: %v, %v", dir, logs, err)
	}
	var n int64
	for _, name := range logs {
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		n += int64(len(bytes.TrimRight(data, "\x00")))
	}
	return n
}
