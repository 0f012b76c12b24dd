package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxDiff bounds the diff an escalation includes (seed 002's
// escalation_includes_diff): a human reads it.
const maxDiff = 8 << 10

// maxDiffCells bounds the work of diffing one file (lines × lines): a
// larger file is only said to have changed.
const maxDiffCells = 4 << 20

// treeDiff returns what the working copy work changed from the package
// src, as a unified diff without context lines (diff -U0) of each file
// added, removed or changed, in path order, cut at limit bytes. The state
// directory and .git are left out, as copyTree leaves them. It is "" when
// nothing changed.
func treeDiff(src, work string, limit int) (string, error) {
	a, err := treeFiles(src)
	if err != nil {
		return "", err
	}
	b, err := treeFiles(work)
	if err != nil {
		return "", err
	}
	paths := make([]string, 0, len(a)+len(b))
	for p := range a {
		paths = append(paths, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out strings.Builder
	for _, p := range paths {
		old, hadOld := a[p]
		cur, hasCur := b[p]
		if hadOld && hasCur && bytes.Equal(old, cur) {
			continue
		}
		from, to := "a/"+p, "b/"+p
		if !hadOld {
			from = "/dev/null"
		}
		if !hasCur {
			to = "/dev/null"
		}
		fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
		out.WriteString(fileDiff(lines(old), lines(cur)))
		if out.Len() > limit {
			break
		}
	}
	s := out.String()
	if len(s) > limit {
		cut := strings.LastIndexByte(s[:limit], '\n') + 1
		s = s[:cut] + fmt.Sprintf("... (diff cut at %d bytes)\n", cut)
	}
	return s, nil
}

// treeFiles reads the regular files under root, by slash path.
func treeFiles(root string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel != "." && (d.Name() == ".git" || d.Name() == stateDir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	return files, err
}

// lines splits data into its lines, each with its newline.
func lines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	l := strings.SplitAfter(string(data), "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// fileDiff returns the hunks (without context) that turn a into b, by a
// longest common subsequence of their lines.
func fileDiff(a, b []string) string {
	if len(a)*len(b) > maxDiffCells {
		return fmt.Sprintf("@@ changed: %d lines, now %d (too large to diff) @@\n", len(a), len(b))
	}
	// lcs[i][j] is the length of the LCS of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if i < len(a) && j < len(b) && a[i] == b[j] {
			i, j = i+1, j+1
			continue
		}
		// A hunk: the lines removed and added up to the next common line.
		i0, j0 := i, j
		for i < len(a) || j < len(b) {
			if i < len(a) && j < len(b) && a[i] == b[j] {
				break
			}
			if j == len(b) || (i < len(a) && lcs[i+1][j] >= lcs[i][j+1]) {
				i++
			} else {
				j++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(i0, i-i0), hunkRange(j0, j-j0))
		for _, l := range a[i0:i] {
			out.WriteString("-" + withNewline(l))
		}
		for _, l := range b[j0:j] {
			out.WriteString("+" + withNewline(l))
		}
	}
	return out.String()
}

// hunkRange is a hunk's range in unified diff form: "start,count", the
// start 1-based, or the line before when count is 0.
func hunkRange(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if count == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func withNewline(l string) string {
	if strings.HasSuffix(l, "\n") {
		return l
	}
	return l + "\n\\ No newline at end of file\n"
}
