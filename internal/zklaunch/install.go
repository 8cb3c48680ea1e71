package zklaunch

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNotInstalled is returned, wrapped, when ZooKeeper's jars or a java
// binary cannot be found. In this repository scripts/install-zookeeper.sh
// installs both (Debian's zookeeper package).
var ErrNotInstalled = errors.New("zklaunch: ZooKeeper or java not found")

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
		if err := checkClasspath(cp); err != nil {
			return "", fmt.Errorf("%w: %s entry: %w", ErrNotInstalled, ClasspathEnv, err)
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

// FindInstall locates java (on PATH) and the ZooKeeper classpath
// ([Classpath]). The error wraps [ErrNotInstalled] when either is
// missing. FindInstall is safe for concurrent use.
func FindInstall() (Install, error) {
	cp, err := Classpath()
	if err != nil {
		return Install{}, err
	}
	return installWith(cp)
}

// JarInstall locates java (on PATH) and builds the classpath of the
// ZooKeeper server jar at path ([JarClasspath]). The error wraps
// [ErrNotInstalled] when java or the jar is missing. JarInstall is safe
// for concurrent use.
func JarInstall(path string) (Install, error) {
	cp, err := JarClasspath(path)
	if err != nil {
		return Install{}, err
	}
	return installWith(cp)
}

func installWith(classpath string) (Install, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return Install{}, fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	return Install{Java: java, Classpath: classpath}, nil
}

// checkClasspath checks that each entry of cp exists (entries holding a
// '*' wildcard are not checked).
func checkClasspath(cp string) error {
	for _, e := range filepath.SplitList(cp) {
		if e == "" || strings.Contains(e, "*") {
			continue
		}
		if _, err := os.Stat(e); err != nil {
			return err
		}
	}
	return nil
}

// JarClasspath returns the classpath that runs ZooKeeper's server from
// the jar at path. A jar whose manifest names its dependencies
// (Class-Path, as Debian's /usr/share/java/zookeeper.jar does) is the
// whole classpath; any other jar is followed by the jars of its own
// directory, as in the lib/ directory of an Apache ZooKeeper release
// (lib/zookeeper-3.9.3.jar next to zookeeper-jute, netty, slf4j...). The
// error wraps [ErrNotInstalled] when the jar is missing or is not a jar.
// JarClasspath is safe for concurrent use.
func JarClasspath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%w: jar %s: %w", ErrNotInstalled, path, err)
	}
	hasClassPath, err := manifestClassPath(abs)
	if err != nil {
		return "", fmt.Errorf("%w: jar %s: %w", ErrNotInstalled, path, err)
	}
	if hasClassPath {
		return abs, nil
	}
	return abs + string(filepath.ListSeparator) + filepath.Join(filepath.Dir(abs), "*"), nil
}

// manifestClassPath reports whether the jar's manifest has a Class-Path
// attribute.
func manifestClassPath(jar string) (bool, error) {
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return false, err
	}
	defer func() { _ = zr.Close() }() // read only: nothing to lose
	f, err := zr.Open("META-INF/MANIFEST.MF")
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Class-Path:") {
			return true, nil
		}
	}
	return false, sc.Err()
}
