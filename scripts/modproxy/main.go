// Command modproxy writes a file-based Go module proxy that serves every
// module of this repository at one version, built from the working tree,
// as the module proxy would serve them once the repository is tagged
// (docs/releasing.md). scripts/test-install.sh points GOPROXY at it and
// installs the side modules from a scratch module, as a user's `go get`
// would, with no network.
//
//	go run ./scripts/modproxy -out DIR [-version v0.1.0]
//
// For each module (a directory with a go.mod, outside testdata) it writes,
// in the proxy layout of `go help goproxy`, <module>/@v/list,
// <version>.info, <version>.mod and <version>.zip. The zip holds the
// module's files under the prefix <module>@<version>/, chosen as `go mod`
// chooses them: the files git would commit (tracked, or untracked and
// not ignored), without nested modules' files, without the files of
// vendored packages (vendor/<dir>/...), and only regular files; testdata
// is kept.
//
// It also checks what makes the workspace and a release agree: every
// module that requires the root module requires it at the version
// served, and go.work replaces that version with the working tree. The
// version defaults to the one go.work replaces. It prints the version.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	out := flag.String("out", "", "the proxy directory to write (created)")
	version := flag.String("version", "", "the version to serve every module at; default: the one go.work replaces")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR [-version vX.Y.Z]")
		os.Exit(2)
	}
	v, err := run(".", *out, *version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
	fmt.Println(v)
}

// run writes the proxy for the repository at repo into out and returns
// the version served.
func run(repo, out, version string) (string, error) {
	files, err := repoFiles(repo)
	if err != nil {
		return "", err
	}
	mods, err := findModules(repo, files)
	if err != nil {
		return "", err
	}
	root := mods[0] // findModules puts the root first
	if version == "" {
		if version, err = workReplaced(repo, root.path); err != nil {
			return "", err
		}
	}
	if err := checkRequires(repo, mods, version); err != nil {
		return "", err
	}
	dirs := make([]string, len(mods))
	for i, m := range mods {
		dirs[i] = m.dir
	}
	for _, m := range mods {
		if err := writeModule(repo, out, m, version, moduleFiles(m.dir, dirs, files)); err != nil {
			return "", err
		}
	}
	return version, nil
}

// module is one module of the repository.
type module struct {
	dir  string // relative to the repository, slash-separated; "." for the root
	path string // its module path
	mod  []byte // its go.mod
}

// repoFiles lists the repository's files as git would commit them:
// tracked (and not deleted), or untracked and not ignored. Paths are
// relative and slash-separated.
func repoFiles(repo string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w: %s", err, stderr.String())
	}
	var files []string
	for f := range strings.SplitSeq(strings.TrimSuffix(string(b), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		fi, err := os.Lstat(filepath.Join(repo, filepath.FromSlash(f)))
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, a symlink or a submodule
		}
		files = append(files, f)
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// findModules returns the modules among files, the root first. A go.mod
// under a testdata directory is test data, not a module.
func findModules(repo string, files []string) ([]module, error) {
	var mods []module
	for _, f := range files {
		if path.Base(f) != "go.mod" || slices.Contains(strings.Split(f, "/"), "testdata") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		p := modulePath(b)
		if p == "" {
			return nil, fmt.Errorf("%s: no module line", f)
		}
		mods = append(mods, module{dir: path.Dir(f), path: p, mod: b})
	}
	i := slices.IndexFunc(mods, func(m module) bool { return m.dir == "." })
	if i < 0 {
		return nil, errors.New("no go.mod at the repository's root")
	}
	mods[0], mods[i] = mods[i], mods[0]
	return mods, nil
}

// modulePath returns the path on go.mod's module line.
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok {
			rest, _, _ = strings.Cut(rest, "//")
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// moduleFiles returns the files of the module in dir: those under dir
// that no nested module (another of dirs, under dir) holds, less the
// files of vendored packages.
func moduleFiles(dir string, dirs, files []string) []string {
	var own []string
	for _, f := range files {
		rel, ok := under(dir, f)
		if !ok || vendoredPackage(rel) {
			continue
		}
		nested := false
		for _, d := range dirs {
			if d != dir && len(d) > len(dir) {
				if _, in := under(d, f); in {
					if _, sub := under(dir, d); sub {
						nested = true
						break
					}
				}
			}
		}
		if !nested {
			own = append(own, rel)
		}
	}
	return own
}

// under reports whether file is under dir, and its path relative to dir.
func under(dir, file string) (string, bool) {
	if dir == "." {
		return file, true
	}
	rel, ok := strings.CutPrefix(file, dir+"/")
	return rel, ok
}

// vendoredPackage reports whether name, relative to its module, is a file
// of a vendored package, which module zips leave out (as
// golang.org/x/mod/zip does: vendor/modules.txt stays).
func vendoredPackage(name string) bool {
	var i int
	if strings.HasPrefix(name, "vendor/") {
		i = len("vendor/")
	} else if j := strings.Index(name, "/vendor/"); j >= 0 {
		i = j + len("/vendor/")
	} else {
		return false
	}
	return strings.Contains(name[i:], "/")
}

// goJSON runs `go <args>` in dir and decodes its JSON output into v.
func goJSON(dir string, v any, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return json.Unmarshal(b, v)
}

type modVersion struct{ Path, Version string }

// workReplaced returns the version of root that go.work replaces.
func workReplaced(repo, root string) (string, error) {
	var work struct {
		Replace []struct{ Old, New modVersion }
	}
	if err := goJSON(repo, &work, "work", "edit", "-json"); err != nil {
		return "", err
	}
	for _, r := range work.Replace {
		if r.Old.Path == root && r.Old.Version != "" {
			return r.Old.Version, nil
		}
	}
	return "", fmt.Errorf("go.work replaces no version of %s: it must replace the version the side modules require (docs/releasing.md)", root)
}

// checkRequires checks that every module requiring the root requires it
// at version, and that go.work replaces that version.
func checkRequires(repo string, mods []module, version string) error {
	root := mods[0].path
	if got, err := workReplaced(repo, root); err != nil {
		return err
	} else if got != version {
		return fmt.Errorf("go.work replaces %s %s, but the version served is %s (docs/releasing.md)", root, got, version)
	}
	var errs []error
	for _, m := range mods[1:] {
		var gomod struct{ Require []modVersion }
		if err := goJSON(repo, &gomod, "mod", "edit", "-json", path.Join(m.dir, "go.mod")); err != nil {
			return err
		}
		for _, r := range gomod.Require {
			if r.Path == root && r.Version != version {
				errs = append(errs, fmt.Errorf("%s/go.mod requires %s %s, not %s (docs/releasing.md)", m.dir, root, r.Version, version))
			}
		}
	}
	return errors.Join(errs...)
}

// writeModule writes m's list, info, mod and zip files into the proxy
// directory out.
func writeModule(repo, out string, m module, version string, files []string) error {
	dir := filepath.Join(out, filepath.FromSlash(escape(m.path)), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	ev := escape(version)
	for name, b := range map[string][]byte{"list": []byte(version + "\n"), ev + ".info": info, ev + ".mod": m.mod} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	f, err := os.Create(filepath.Join(dir, ev+".zip"))
	if err != nil {
		return err
	}
	if err := writeZip(f, filepath.Join(repo, filepath.FromSlash(m.dir)), m.path+"@"+version, files); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", m.path, err)
	}
	return f.Close()
}

// writeZip writes a module zip: each of files, read from dir, under
// prefix/.
func writeZip(w io.Writer, dir, prefix string, files []string) error {
	zw := zip.NewWriter(w)
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return err
		}
		fw, err := zw.Create(prefix + "/" + name)
		if err != nil {
			return err
		}
		if _, err := fw.Write(b); err != nil {
			return err
		}
	}
	return zw.Close()
}

// escape is the module proxy's case encoding of a path or version: each
// upper-case letter becomes '!' and its lower case.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
