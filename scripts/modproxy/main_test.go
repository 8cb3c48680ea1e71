package main

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A module's zip holds its own files as `go mod` picks them: not a nested
// module's, not a vendored package's, testdata kept.
func TestModuleFiles(t *testing.T) {
	t.Parallel()
	files := []string{
		"go.mod", "a.go", "testdata/x.txt",
		"vendor/modules.txt", "vendor/example.com/dep/dep.go",
		"sub/go.mod", "sub/s.go", "sub/vendor/example.com/d/d.go",
		"sub/deeper/go.mod", "sub/deeper/d.go",
		"subx/y.go", // not under sub/: the root's
	}
	dirs := []string{".", "sub", "sub/deeper"}
	tests := []struct {
		dir  string
		want []string
	}{
		{".", []string{"go.mod", "a.go", "testdata/x.txt", "vendor/modules.txt", "subx/y.go"}},
		{"sub", []string{"go.mod", "s.go"}},
		{"sub/deeper", []string{"go.mod", "d.go"}},
	}
	for _, tt := range tests {
		if got := moduleFiles(tt.dir, dirs, files); !slices.Equal(got, tt.want) {
			t.Errorf("moduleFiles(%q) = %q, want %q", tt.dir, got, tt.want)
		}
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	if got, want := escape("github.com/BurntSushi/toml"), "github.com/!burnt!sushi/toml"; got != want {
		t.Errorf("escape = %q, want %q", got, want)
	}
}

func TestModulePath(t *testing.T) {
	t.Parallel()
	for _, gomod := range []string{"module example.com/m\n", "// c\nmodule \"example.com/m\" // c\n\ngo 1.26\n"} {
		if got := modulePath([]byte(gomod)); got != "example.com/m" {
			t.Errorf("modulePath(%q) = %q", gomod, got)
		}
	}
}

// Every entry of a module zip is under module@version/.
func TestWriteZip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "p/p.go"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := writeZip(&buf, dir, "example.com/m@v0.1.0", []string{"go.mod", "p/p.go"}); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range zr.File {
		got = append(got, f.Name)
	}
	if want := []string{"example.com/m@v0.1.0/go.mod", "example.com/m@v0.1.0/p/p.go"}; !slices.Equal(got, want) {
		t.Errorf("zip entries %q, want %q", got, want)
	}
}
