// Package zktest runs real Apache ZooKeeper servers and ensembles for
// tests, and injects network faults between them and their clients. It is
// test workshop code: production code never imports it.
//
// It builds on the launcher, internal/zklaunch, which finds the
// installation, writes zoo.cfg and runs each server's JVM: a standalone
// server is a [zklaunch.Server], started here with [StartServer] on test
// [Options]; an [Ensemble] of quorum peers, started with
// [StartEnsemble], runs a [zklaunch.Process] per member. Servers can be
// stopped, killed and restarted on the same address and data directory,
// so sessions survive a restart as they do in production.
//
// A [Proxy] sits between a client and the servers and injects network
// faults: [Proxy.Reset] aborts every connection, [Proxy.Blackhole] silently
// drops all traffic, [Proxy.Reject] resets the clients' ends while the
// targets hear only silence. With [Options.QuorumProxies] an ensemble's
// own links (quorum and leader election) pass through proxies too, so
// that a member can be cut off from the others while its clients still
// reach it: [Ensemble.BlackholeQuorum], [Ensemble.BlackholeElection],
// [Ensemble.Isolate] and the one-sided [Ensemble.Reject]. [FourLetter]
// sends ZooKeeper's four-letter admin words; [ExpireSession] ends a
// session as its expiry would; [Ephemerals] lists who holds what.
//
// The helpers [Standalone], [NewEnsemble] and [StartProxy] wrap the rest
// for tests: they register cleanups and skip the test when ZooKeeper is
// not installed, except under CI (CI=true), where they fail it instead.
//
// Every process and goroutine this package starts is owned by the value that
// started it and is waited for by its Close. Every wait has a deadline: a
// context without one gets a default.
package zktest
