// Package integration holds zkalloc's ZooKeeper-backed suites, in a
// module of its own (github.com/zkalloc/zkalloc/integration, which
// replaces github.com/zkalloc/zkalloc with ../), as hashicorp/raft keeps
// its fuzzy/ tests: what runs the allocator for minutes against real
// servers, ensembles and network faults, apart from the library's own
// tests. It has no code of its own but the history checker,
// [github.com/zkalloc/zkalloc/integration/history]; the suites are its
// tests:
//
//   - TestChaos (chaos_*_test.go): members on a 3-node ensemble behind
//     fault-injecting proxies, under a seeded random schedule of faults,
//     checked by the history checker. ZKALLOC_CHAOS_SEED replays a
//     schedule, ZKALLOC_CHAOS_FAULTS sets how many faults (default 50),
//     ZKALLOC_CHAOS_DURATION (e.g. 10m) keeps injecting for a soak,
//     ZKALLOC_CHAOS_STRATEGY picks the strategy (round-robin, balanced,
//     range; by default the seed does);
//   - TestFollowerCutOffNeverTwoOwners and TestDeposedLeaderNeverTwoOwners:
//     a follower, and a leader, cut off from the quorum while their
//     clients still reach them;
//   - TestFastJoin: a member joining a group of 100,000 partitions
//     (ZKALLOC_FASTJOIN_TOPICS × 1,000 if set, 10,000 with -short);
//   - TestStickySequenceMovesTheMinimum and TestStickyRollingRestart
//     (sticky_*_test.go): issue 27's checks of the default (sticky)
//     strategy: over joins, a leave, a crash, partition changes, a
//     weighted member, a drain and an undrain, the partitions that change
//     owner are exactly the minimum and every member is within one of its
//     share; a rolling restart moves only each restarted member's own,
//     away and back, and nothing with DepartureDelay;
//   - the scale runs (TestScale*), only with ZKALLOC_SCALE=1;
//   - the benchmarks: BenchmarkConvergence, BenchmarkConvergenceCrash,
//     BenchmarkConvergenceProcs (members in processes of their own), each
//     with the sticky default and Balanced, BenchmarkFastJoin, and
//     BenchmarkStartLarge (Start into a group of 100,000 partitions).
//
// `make test` runs this module after the main one:
//
//	cd integration && go vet ./... && go test -race -gcflags=github.com/go-zookeeper/zk=-race=false -count=1 ./...
//
// Go's internal rule goes by import path, so these tests use the main
// module's internal packages (internal/zktest, internal/zkpath...); they
// do not see its unexported names or its export_test.go. They count a
// member's requests with a tapped proxy (zktest.StartTappedProxy)
// between it and the server.
package integration
