// Package zktest runs real Apache ZooKeeper servers for tests and demos.
//
// It starts Debian's ZooKeeper 3.8 (the jars of the `zookeeper` package,
// installed by scripts/install-zookeeper.sh) as child Java processes on free
// loopback ports: a standalone [Server] with [StartServer], or an
// [Ensemble] of quorum peers with [StartEnsemble]. Servers can be stopped,
// killed and restarted on the same address and data directory, so sessions
// survive a restart as they do in production.
//
// A [Proxy] sits between a client and the servers and injects network
// faults: [Proxy.Reset] aborts every connection, [Proxy.Blackhole] silently
// drops all traffic, [Proxy.Reject] resets the clients' ends while the
// targets hear only silence. With [Options.QuorumProxies] an ensemble's
// own links (quorum and leader election) pass through proxies too, so
// that a member can be cut off from the others while its clients still
// reach it: [Ensemble.BlackholeQuorum], [Ensemble.BlackholeElection],
// [Ensemble.Isolate] and the one-sided [Ensemble.Reject]. [FourLetter]
// sends ZooKeeper's four-letter admin words.
//
// The core API needs no [testing] package, so a demo program can use it. The
// helpers [Standalone], [NewEnsemble] and [StartProxy] wrap it for tests:
// they register cleanups and skip the test when ZooKeeper is not installed,
// except under CI (CI=true), where they fail it instead.
//
// Every process and goroutine this package starts is owned by the value that
// started it and is waited for by its Close. Java processes run in their
// own process group with a parent-death signal, so they die with the test
// binary. Every wait has a deadline: a context without one gets a default.
package zktest
