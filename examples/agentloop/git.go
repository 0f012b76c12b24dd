package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/refine-go/refine/examples/internal/xcmd"
)

// What an iteration does with its changes to the workspace (--git).
const (
	gitOff    = "off"
	gitCommit = "commit"
	gitStash  = "stash"
)

// gitModes lists the values of --git.
var gitModes = []string{gitOff, gitCommit, gitStash}

// validGitMode returns a usage error for a value --git does not know.
func validGitMode(name, v string) error {
	for _, m := range gitModes {
		if v == m {
			return nil
		}
	}
	return usagef("%s: %q is not one of %s", name, v, strings.Join(gitModes, ", "))
}

// gitOn reports whether --git asks for anything ("" is off).
func (s *settings) gitOn() bool { return s.Git != "" && s.Git != gitOff }

// gitExclude leaves agentloop's own directory (state, config) out of what
// an iteration records.
const gitExclude = ":(exclude).agentloop"

// gitError reports a git command that failed, with the end of its output.
type gitError struct {
	Args   []string
	Err    error
	Output string
}

func (e *gitError) Error() string {
	msg := "git " + strings.Join(e.Args, " ") + ": " + e.Err.Error()
	if out := strings.TrimSpace(e.Output); out != "" {
		msg += ": " + out
	}
	return msg
}

func (e *gitError) Unwrap() error { return e.Err }

// git runs git with args in the workspace, in its own process group
// (xcmd), and returns its standard output.
func (a *agent) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = a.set.Workspace
	cmd.Env = a.env
	var stdout, stderr xcmd.Tail
	stdout.Max, stderr.Max = 64<<10, 4<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	xcmd.Prepare(cmd, killGrace)
	err := xcmd.Start(cmd)
	if err == nil {
		err = xcmd.Wait(cmd)
	}
	if err != nil {
		return "", &gitError{Args: args, Err: err, Output: stderr.String()}
	}
	return stdout.String(), nil
}

// checkGit checks that the workspace is in a git work tree when --git asks
// for one.
func (a *agent) checkGit(ctx context.Context) error {
	if !a.set.gitOn() {
		return nil
	}
	out, err := a.git(ctx, "rev-parse", "--is-inside-work-tree")
	if err != nil || strings.TrimSpace(out) != "true" {
		var ee *exec.Error
		if errors.As(err, &ee) {
			return usagef("--git %s: git is not installed: %v", a.set.Git, err)
		}
		return usagef("--git %s: workspace %s is not in a git work tree", a.set.Git, a.set.Workspace)
	}
	return nil
}

// record records the iteration's changes to the workspace in git, as
// --git says: a commit, or a snapshot on the stash list that leaves the
// workspace as it is (its new files staged). It returns what it did, ""
// when there was nothing to record.
func (a *agent) record(ctx context.Context, iteration int, outcome string) (string, error) {
	if !a.set.gitOn() {
		return "", nil
	}
	msg := fmt.Sprintf("agentloop %s: iteration %d (%s)", a.set.Procedure, iteration, outcome)
	if _, err := a.git(ctx, "add", "--all", "--", ".", gitExclude); err != nil {
		return "", err
	}
	switch a.set.Git {
	case gitCommit:
		// Nothing staged: nothing to commit.
		if _, err := a.git(ctx, "diff", "--cached", "--quiet"); err == nil {
			return "", nil
		}
		if _, err := a.git(ctx, "commit", "--quiet", "--no-verify", "-m", msg); err != nil {
			return "", err
		}
		rev, err := a.git(ctx, "rev-parse", "--short", "HEAD")
		if err != nil {
			return "", err
		}
		return "committed " + strings.TrimSpace(rev) + ": " + msg, nil
	default: // gitStash
		rev, err := a.git(ctx, "stash", "create", msg)
		if err != nil || strings.TrimSpace(rev) == "" {
			return "", err
		}
		rev = strings.TrimSpace(rev)
		if _, err := a.git(ctx, "stash", "store", "-m", msg, rev); err != nil {
			return "", err
		}
		return "stashed " + rev[:min(len(rev), 7)] + ": " + msg, nil
	}
}
