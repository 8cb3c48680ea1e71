package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zkalloc/zkalloc"
	"github.com/zkalloc/zkalloc/internal/zklaunch"
)

// demo shows a consumer group sharing partitions through ZooKeeper. It
// starts a throwaway local ZooKeeper server (or uses the one given with
// -servers), runs three members in this process, then adds a fourth, adds
// partitions, closes one member, and shuts everything down, printing
// every Update each member's consumer receives. It is what `make demo`
// runs.
func demo(ctx context.Context, o options, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	addrs := []string{o.servers}
	if o.set["servers"] {
		if _, _, err := parseServers(o.servers); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w, "starting a local ZooKeeper server...")
		srv, err := zklaunch.StartServer(ctx, zklaunch.Options{})
		if err != nil {
			return fmt.Errorf("start ZooKeeper (run scripts/install-zookeeper.sh, or pass -servers): %w", err)
		}
		defer func() { _ = srv.Close() }() // the demo is over: nothing to tell
		addrs = []string{srv.Addr()}
		fmt.Fprintln(w, "ZooKeeper is up at", srv.Addr())
	}

	level := slog.LevelError
	if o.verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	group := fmt.Sprintf("demo-%d", time.Now().UnixNano())
	var wg sync.WaitGroup
	members := map[string]*zkalloc.Allocator{}

	join := func(name string, seed map[string][]int32) error {
		alloc, err := zkalloc.New(zkalloc.Config{
			Servers:    addrs,
			Group:      group,
			Member:     name,
			Partitions: seed,
			Logger:     logger,
		})
		if err != nil {
			return err
		}
		// The consumer: it reads its own Updates until the channel closes.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range alloc.Updates() {
				// A real consumer stops u.Revoked here, acks, then starts u.Added.
				u.Ack()
				pending := ""
				if len(u.Pending) > 0 {
					pending = "  pending " + list(u.Pending)
				}
				fmt.Fprintf(w, "  %-3s gen %d  members %v  assigned %s  added %s  revoked %s%s\n",
					name, u.Generation, u.Members, list(u.Assigned), list(u.Added), list(u.Revoked), pending)
			}
			fmt.Fprintf(w, "  %-3s updates closed\n", name)
		}()
		if err := alloc.Start(ctx); err != nil {
			_ = alloc.Close() // Start closed it already, with the same error
			return fmt.Errorf("start %s: %w", name, err)
		}
		members[name] = alloc
		return nil
	}
	leave := func(name string) error {
		err := members[name].Close()
		delete(members, name)
		return err
	}
	// Printing is shared by the consumers' goroutines.
	var printMu sync.Mutex
	w = &lockedWriter{w: w, mu: &printMu}
	step := func(what string) {
		// Let the group's updates print before the next step.
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		fmt.Fprintln(w, "\n==>", what)
	}
	defer func() {
		for name := range members {
			_ = leave(name) // on the way out: each consumer prints its end
		}
		wg.Wait()
	}()

	fmt.Fprint(w, demoLegend)
	step("three members join; the first seeds events:0-11")
	for i, name := range []string{"m1", "m2", "m3"} {
		var seed map[string][]int32
		if i == 0 {
			seed = map[string][]int32{"events": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}
		}
		if err := join(name, seed); err != nil {
			return err
		}
	}
	step("m4 joins")
	if err := join("m4", nil); err != nil {
		return err
	}
	step("m2 adds audit:0-3")
	if err := members["m2"].AddPartitions(ctx, map[string][]int32{"audit": {0, 1, 2, 3}}); err != nil {
		return err
	}
	step("m1 leaves")
	if err := leave("m1"); err != nil {
		return err
	}
	step("m3 removes events:8-11")
	if err := members["m3"].RemovePartitions(ctx, map[string][]int32{"events": {8, 9, 10, 11}}); err != nil {
		return err
	}
	step("everyone leaves")
	for _, name := range []string{"m2", "m3", "m4"} {
		if err := leave(name); err != nil {
			return err
		}
	}
	wg.Wait()
	fmt.Fprintln(w, "\ndone")
	return nil
}

// demoLegend says how to read the lines the consumers print.
const demoLegend = `
Each line is one Update a member's consumer received:
  gen       the Update's generation: it names the view of the group (its
            members and partitions) the assignment was computed from;
            members that computed from the same view show the same one,
            and a newer view has a larger one
  members   the members the assignment was computed for
  assigned  the partitions the member owns now; added and revoked, what
            changed since its last Update; pending, those it is given but
            another member has not released yet
`

// list renders partitions compactly: "events:0,3,6 audit:1".
func list(ps []zkalloc.Partition) string {
	if len(ps) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, p := range ps {
		switch {
		case i == 0:
			fmt.Fprintf(&b, "%s:%d", p.Topic, p.ID)
		case p.Topic != ps[i-1].Topic:
			fmt.Fprintf(&b, " %s:%d", p.Topic, p.ID)
		default:
			fmt.Fprintf(&b, ",%d", p.ID)
		}
	}
	return b.String()
}

// lockedWriter serializes writes from the consumers' goroutines.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
