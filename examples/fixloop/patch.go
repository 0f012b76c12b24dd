package main

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// deleteList is the file of a patch directory listing the paths (relative
// to the working copy, one per line, "#" comments allowed) the patch
// removes. It is not copied.
const deleteList = ".fixloop-delete"

// stateDir is the directory of the working copy that holds the checkpoints;
// the go command ignores it (its name starts with a dot).
const stateDir = ".fixloop"

// errNoPatch is matched by the error of an attempt that has no candidate
// patch left.
var errNoPatch = errors.New("no candidate patch left")

// patchDirs returns the candidate patches of dir: its subdirectories in
// name order (01, 02, ...). Files directly in dir (a README) are ignored.
func patchDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("patches: %w", err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, e.Name())
		}
	}
	slices.Sort(dirs)
	return dirs, nil
}

// applyOverlay applies the patch directory patch to the working copy work:
// every regular file of patch overwrites (or creates) the file at the same
// relative path in work, and the paths listed in its .fixloop-delete file
// are removed. It returns the relative paths changed, sorted.
func applyOverlay(patch, work string) ([]string, error) {
	var changed []string
	err := filepath.WalkDir(patch, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(patch, path)
		if err != nil {
			return err
		}
		if d.IsDir() || rel == deleteList || !d.Type().IsRegular() {
			return nil
		}
		if err := copyFile(path, filepath.Join(work, rel)); err != nil {
			return err
		}
		changed = append(changed, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("applying patch %s: %w", filepath.Base(patch), err)
	}
	removed, err := applyDeletes(filepath.Join(patch, deleteList), work)
	if err != nil {
		return nil, fmt.Errorf("applying patch %s: %w", filepath.Base(patch), err)
	}
	changed = append(changed, removed...)
	slices.Sort(changed)
	return slices.Compact(changed), nil
}

// applyDeletes removes the paths listed in the file list from work. A
// missing list removes nothing; a list with a path that is not local to
// work (absolute, or escaping with "..") is an error, and removes nothing.
func applyDeletes(list, work string) ([]string, error) {
	f, err := os.Open(list)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	paths, err := parseDeleteList(f)
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		if err := os.RemoveAll(filepath.Join(work, filepath.FromSlash(p))); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// parseDeleteList parses a .fixloop-delete list: one slash-separated path
// per line, relative to the working copy, surrounding spaces ignored, and
// empty lines and lines starting with "#" skipped. The paths are returned
// cleaned ("./a/../b.go" is "b.go"). Every path must be local
// (filepath.IsLocal: not absolute, no "..", no reserved name) and name
// something inside the working copy other than the copy itself and the
// checkpoint directory; the first that does not is an error naming it.
func parseDeleteList(r io.Reader) ([]string, error) {
	var paths []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p := strings.TrimSpace(sc.Text())
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return nil, fmt.Errorf("%s: path %q is not inside the working copy", deleteList, p)
		}
		clean := path.Clean(p)
		if first, _, _ := strings.Cut(clean, "/"); clean == "." || first == stateDir {
			return nil, fmt.Errorf("%s: path %q would remove the working copy or its checkpoints", deleteList, p)
		}
		paths = append(paths, clean)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", deleteList, err)
	}
	return paths, nil
}

// copyTree copies the regular files of src into dst, creating directories
// as needed and skipping .git, the checkpoint directory and anything that
// is neither a directory nor a regular file (symbolic links).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel != "." && (d.Name() == ".git" || d.Name() == stateDir) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(path, filepath.Join(dst, rel))
	})
}

// copyFile copies the file src to dst, creating dst's directory, and keeps
// the permission bits of src.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// snapshot maps the relative path of every regular file of dir (outside the
// checkpoint directory and .git) to a hash of its content.
func snapshot(dir string) (map[string][sha256.Size]byte, error) {
	m := map[string][sha256.Size]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (d.Name() == ".git" || d.Name() == stateDir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		m[filepath.ToSlash(rel)] = sha256.Sum256(b)
		return nil
	})
	return m, err
}

// changedFiles lists the paths added, modified or removed between two
// snapshots, sorted.
func changedFiles(before, after map[string][sha256.Size]byte) []string {
	var out []string
	for p, h := range after {
		if b, ok := before[p]; !ok || b != h {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
