// Package zklaunch runs a local Apache ZooKeeper server as a child Java
// process: the launcher behind `zkalloc demo`, behind the public package
// zkserver that users' tests start servers with, and the ground the test
// workshop (internal/zktest) builds its servers and ensembles on.
//
// It runs Debian's ZooKeeper 3.8 (the jars of the `zookeeper` package,
// installed by scripts/install-zookeeper.sh), or a server jar the caller
// names. [FindInstall] finds java and Debian's classpath, [JarInstall] a
// named jar's; a [Config] renders and writes a zoo.cfg; [StartProcess]
// starts the JVM on it, [Process.WaitReady] waits until the server answers
// `ruok` (and serves), and [Process.Stop] stops it. [StartServer] does all
// of that for a standalone [Server] on a free loopback port, which can be
// stopped, killed and started again on the same address and data
// directory. [StartEnsemble] starts an [Ensemble] of quorum peers and
// waits until they serve under one leader. [FourLetter] sends ZooKeeper's four-letter admin words.
//
// Every process and goroutine this package starts is owned by the value
// that started it and is waited for by its Stop or Close. Java processes
// run in their own process group with a parent-death signal, so they die
// with the program. Every wait has a deadline: a context without one gets
// a default.
package zklaunch
