// Package zkserver runs a real Apache ZooKeeper for tests: a standalone
// server ([Start]) or an ensemble ([StartEnsemble]), as Java processes on
// free 127.0.0.1 ports, stopped and removed when the test ends.
//
//	zk := zkserver.Start(t)
//	alloc, err := zkalloc.New(zkalloc.Config{Servers: zk.Servers(), ...})
//
// It runs Debian's ZooKeeper (the zookeeper package:
// /usr/share/java/zookeeper.jar, with /etc/zookeeper/conf), or the server
// jar named by the [Jar] option or the environment variable
// ZKALLOC_ZOOKEEPER_JAR ([JarEnv]), with the java found on PATH. A server
// is ready when it answers `ruok` and serves clients; an ensemble when
// all its members serve under one leader. The servers tick every 500 ms,
// so they grant session timeouts from 1 s to 10 s.
//
// When Java or ZooKeeper is missing, the test is skipped with a message
// that says what to install, unless the [Required] option is given or the
// environment variable CI is true, as CI services set it: then the test
// fails, so that a CI machine without ZooKeeper cannot pass by skipping.
//
// zkserver is for tests; it imports package testing. The package
// zkalloctest runs a group in memory instead, without ZooKeeper.
package zkserver
