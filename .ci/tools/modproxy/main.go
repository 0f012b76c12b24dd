// Command modproxy adds modules of a git checkout, at a version, to a
// directory laid out as a Go module proxy (GOPROXY=file://DIR): for each
// module directory, DIR/<module>/@v/{list,VERSION.info,VERSION.mod,VERSION.zip}.
//
// The zip holds the files git knows (tracked, or untracked and not ignored)
// as they are in the work tree, filtered as the go command filters a
// module's zip (no nested modules, no vendor directories of dependencies):
// what a module proxy serves for a tag of that tree.
//
//	modproxy -out DIR -version v0.4.0 -repo ROOT [MODDIR ...]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "proxy `dir`ectory to add to")
	version := flag.String("version", "", "the modules' `version` (a semantic version: v0.4.0)")
	repo := flag.String("repo", ".", "the git checkout's root `dir`ectory")
	flag.Parse()
	if *out == "" || *version == "" {
		flag.Usage()
		os.Exit(2)
	}
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	for _, d := range dirs {
		if err := add(*out, *repo, d, *version); err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s: %v\n", d, err)
			os.Exit(1)
		}
	}
}

type file struct{ path, abs string }

func (f file) Path() string                 { return f.path }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.abs) }

func add(out, repo, dir, version string) error {
	root, err := filepath.Abs(filepath.Join(repo, dir))
	if err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		return err
	}
	m := module.Version{Path: mf.Module.Mod.Path, Version: version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}

	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", ".")
	ls.Dir = root
	ls.Stderr = os.Stderr
	listed, err := ls.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	var files []modzip.File
	for _, p := range strings.Split(string(listed), "\x00") {
		if p == "" {
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(p))
		if _, err := os.Lstat(abs); err != nil { // deleted in the work tree
			continue
		}
		files = append(files, file{path: p, abs: abs})
	}
	var zbuf bytes.Buffer
	if err := modzip.Create(&zbuf, m, files); err != nil {
		return err
	}

	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, commitTime(root)})
	for name, data := range map[string][]byte{
		version + ".info": info,
		version + ".mod":  gomod,
		version + ".zip":  zbuf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return err
		}
	}
	list := filepath.Join(vdir, "list")
	old, _ := os.ReadFile(list)
	versions := strings.Fields(string(old))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	if err := os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s@%s: %d files, %d bytes\n", m.Path, version, len(files), zbuf.Len())
	return nil
}

// commitTime is the time of the checkout's HEAD commit, the time a tag of
// it would have; now when there is none.
func commitTime(dir string) time.Time {
	cmd := exec.Command("git", "log", "-1", "--format=%cI")
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return time.Now().UTC()
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Now().UTC()
	}
	return t.UTC()
}
