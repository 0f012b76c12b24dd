package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/refine-go/refine/examples/internal/xcmd"
	"github.com/refine-go/refine/gap"
)

// maxIssues bounds the issues kept of one review.
const maxIssues = 10

// builtinReview reviews the working copy dir the way a careful Go reviewer
// would before anything else: every .go file must be gofmt-formatted
// (checked in process with go/format) and `go vet ./...` must be clean.
// When the package does not build (buildOK false), vet is skipped, since
// the tests already report the compile errors; the review is then pending
// unless gofmt found something.
func builtinReview(ctx context.Context, dir string, buildOK bool) (*gap.Review, error) {
	issues, err := gofmtIssues(dir)
	if err != nil {
		return nil, err
	}
	if buildOK {
		vet, err := vetIssues(ctx, dir)
		if err != nil {
			return nil, err
		}
		issues = append(issues, vet...)
	}
	switch {
	case len(issues) > 0:
		if len(issues) > maxIssues {
			issues = issues[:maxIssues]
		}
		return &gap.Review{Status: gap.ReviewReject, Issues: issues}, nil
	case !buildOK:
		return &gap.Review{Status: gap.ReviewPending}, nil
	}
	return &gap.Review{Status: gap.ReviewApprove}, nil
}

// gofmtIssues lists the .go files of dir that gofmt would change, skipping
// directories the go command ignores (testdata, vendor, names starting with
// "." or "_").
func gofmtIssues(dir string) ([]string, error) {
	var issues []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		out, err := format.Source(src)
		switch {
		case err != nil:
			issues = append(issues, fmt.Sprintf("%s: gofmt cannot parse it: %s", rel, firstLines(err.Error(), 1)))
		case !bytes.Equal(out, src):
			issues = append(issues, rel+": not gofmt-formatted (run gofmt -w "+rel+")")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	return issues, nil
}

// vetIssues runs `go vet ./...` in dir and returns its findings, one per
// line, without the "# package" headers.
func vetIssues(ctx context.Context, dir string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "vet", "./...")
	cmd.Dir = dir
	cmd.Env = goEnv()
	xcmd.Prepare(cmd, killGrace)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := xcmd.Run(cmd)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return nil, fmt.Errorf("go vet: %w", err)
	}
	if err == nil {
		return nil, nil
	}
	var issues []string
	for l := range strings.SplitSeq(out.String(), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "vet: "))
		if l == "" || strings.HasPrefix(l, "#") || slices.Contains(issues, "go vet: "+l) {
			continue
		}
		issues = append(issues, "go vet: "+l)
	}
	if len(issues) == 0 {
		issues = append(issues, "go vet failed: "+err.Error())
	}
	return issues, nil
}

// commandReview runs a reviewer command (with sh -c, in dir, with env
// added to the environment). Exit status 0 approves; 1 rejects, with every
// non-empty line of its standard output an issue; anything else is an
// error of the reviewer itself.
func commandReview(ctx context.Context, command, dir string, env []string) (*gap.Review, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	xcmd.Prepare(cmd, killGrace)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := xcmd.Run(cmd)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return &gap.Review{Status: gap.ReviewApprove}, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 1:
		var issues []string
		for l := range strings.SplitSeq(stdout.String(), "\n") {
			if l = strings.TrimSpace(l); l != "" && len(issues) < maxIssues {
				issues = append(issues, clip(l, maxMessage))
			}
		}
		return &gap.Review{Status: gap.ReviewReject, Issues: issues}, nil
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		return nil, fmt.Errorf("reviewer command %q: %w: %s", command, err, firstLines(msg, 3))
	}
	return nil, fmt.Errorf("reviewer command %q: %w", command, err)
}
