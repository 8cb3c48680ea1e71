package zklaunch

import (
	"archive/zip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestClasspathOverride(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		env     string
		wantErr bool
	}{
		{env: dir, wantErr: false},
		{env: dir + string(filepath.ListSeparator) + filepath.Join(dir, "*"), wantErr: false},
		{env: filepath.Join(dir, "missing.jar"), wantErr: true},
	}
	for _, tt := range tests {
		t.Setenv(ClasspathEnv, tt.env)
		got, err := Classpath()
		if tt.wantErr {
			if !errors.Is(err, ErrNotInstalled) {
				t.Errorf("Classpath() with %s=%q: error %v, want ErrNotInstalled", ClasspathEnv, tt.env, err)
			}
			continue
		}
		if err != nil || got != tt.env {
			t.Errorf("Classpath() with %s=%q = %q, %v; want it unchanged", ClasspathEnv, tt.env, got, err)
		}
	}
}

// A jar whose manifest lists its dependencies runs alone; any other jar
// with the jars beside it; a missing or broken jar is not installed.
func TestJarClasspath(t *testing.T) {
	dir := t.TempDir()
	writeJar := func(name, manifest string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		if manifest != "" {
			w, err := zw.Create("META-INF/MANIFEST.MF")
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(w, manifest)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	withDeps := writeJar("debian.jar", "Manifest-Version: 1.0\nClass-Path: /usr/share/java/zookeeper-jute.jar\n")
	release := writeJar("zookeeper-3.9.3.jar", "Manifest-Version: 1.0\n")
	bare := writeJar("bare.jar", "")
	notJar := filepath.Join(dir, "not.jar")
	if err := os.WriteFile(notJar, []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	sep := string(filepath.ListSeparator)
	tests := []struct {
		jar, want string
	}{
		{withDeps, withDeps},
		{release, release + sep + filepath.Join(dir, "*")},
		{bare, bare + sep + filepath.Join(dir, "*")},
	}
	for _, tt := range tests {
		if got, err := JarClasspath(tt.jar); err != nil || got != tt.want {
			t.Errorf("JarClasspath(%s) = %q, %v; want %q", tt.jar, got, err, tt.want)
		}
	}
	for _, jar := range []string{notJar, filepath.Join(dir, "missing.jar")} {
		if _, err := JarClasspath(jar); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("JarClasspath(%s): error %v, want ErrNotInstalled", jar, err)
		}
	}
}
