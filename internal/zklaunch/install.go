package zklaunch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNotInstalled is returned, wrapped, when ZooKeeper's jars or a java
// binary cannot be found. scripts/install-zookeeper.sh installs both.
var ErrNotInstalled = errors.New("zklaunch: zookeeper not installed (run scripts/install-zookeeper.sh)")

// ClasspathEnv names the environment variable that, when set, replaces the
// classpath [Classpath] would otherwise build.
const ClasspathEnv = "ZKALLOC_ZK_CLASSPATH"

// Paths of Debian's zookeeper and libzookeeper-java packages.
const (
	debianConfDir = "/etc/zookeeper/conf"
	debianJar     = "/usr/share/java/zookeeper.jar"
)

// debianLogJars bind ZooKeeper's slf4j logging to log4j 1.2, which reads
// log4j.properties from debianConfDir. Both are dependencies of Debian's
// libzookeeper-java. Without a binding ZooKeeper logs nothing at all, and a
// server that fails to start (a port taken, a bad zoo.cfg) says nothing
// about why.
var debianLogJars = []string{
	"/usr/share/java/slf4j-log4j12.jar",
	"/usr/share/java/log4j-1.2.jar",
}

// Classpath returns the Java classpath for ZooKeeper's server classes.
//
// If the environment variable ZKALLOC_ZK_CLASSPATH ([ClasspathEnv]) is set,
// it is returned after checking that each of its entries exists (entries
// holding a '*' wildcard are not checked). Otherwise Classpath returns
// Debian's layout, /etc/zookeeper/conf:/usr/share/java/zookeeper.jar,
// followed by the slf4j-to-log4j jars when they are installed so that the
// server logs. The error wraps [ErrNotInstalled] when the jar is missing.
//
// Classpath is safe for concurrent use.
func Classpath() (string, error) {
	if cp := os.Getenv(ClasspathEnv); cp != "" {
		for _, e := range filepath.SplitList(cp) {
			if e == "" || strings.Contains(e, "*") {
				continue
			}
			if _, err := os.Stat(e); err != nil {
				return "", fmt.Errorf("%w: %s entry: %w", ErrNotInstalled, ClasspathEnv, err)
			}
		}
		return cp, nil
	}
	if _, err := os.Stat(debianJar); err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	entries := []string{debianJar}
	if fi, err := os.Stat(debianConfDir); err == nil && fi.IsDir() {
		entries = []string{debianConfDir, debianJar}
	}
	for _, j := range debianLogJars {
		if _, err := os.Stat(j); err != nil {
			return strings.Join(entries, string(filepath.ListSeparator)), nil
		}
	}
	entries = append(entries, debianLogJars...)
	return strings.Join(entries, string(filepath.ListSeparator)), nil
}

// Install is what starting a server needs from the machine: a java
// binary and ZooKeeper's classpath.
type Install struct {
	Java      string // the java binary's path
	Classpath string // as [Classpath] returns it
}

// FindInstall locates java (on PATH) and the ZooKeeper classpath. The
// error wraps [ErrNotInstalled] when either is missing. FindInstall is
// safe for concurrent use.
func FindInstall() (Install, error) {
	cp, err := Classpath()
	if err != nil {
		return Install{}, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return Install{}, fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	return Install{Java: java, Classpath: cp}, nil
}
