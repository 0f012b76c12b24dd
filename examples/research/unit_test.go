package main

import (
	"strings"
	"testing"
)

func TestResumeCommand(t *testing.T) {
	got := resumeCommand([]string{"--root", "my tree", "--resume", "--json"})
	if want := "research --root 'my tree' --json --resume"; got != want {
		t.Errorf("resumeCommand = %q, want %q", got, want)
	}
	// The --store password is never printed, whichever way the flag is
	// written.
	const note = " --resume (the --store password left out: put it back in the URL, or set PGPASSWORD)"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "postgres://u:secret@h:5432/db?sslmode=disable", "--resume"}, "research --store postgres://u@h:5432/db?sslmode=disable" + note},
		{[]string{"--store=postgres://u:secret@h/db"}, "research --store=postgres://u@h/db" + note},
		{[]string{"-store", "postgresql://h/db?password=secret&sslmode=require"}, "research -store postgresql://h/db?sslmode=require" + note},
		{[]string{"-store=postgres://u:se%zz@h/db"}, "research -store=postgres://..." + note},
		{[]string{"--store", "postgres://u@h/db"}, "research --store postgres://u@h/db --resume"},
		{[]string{"--state", "postgres://u:secret@h/db"}, "research --state postgres://u:secret@h/db --resume"},
	} {
		if got := resumeCommand(tt.args); got != tt.want || (strings.Contains(got, "secret") && tt.args[0] != "--state") {
			t.Errorf("resumeCommand(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db?sslmode=disable":   "postgres://u@h:5432/db?sslmode=disable",
		"postgresql://u@h/db":                             "postgresql://u@h/db",
		"postgres://h/db?password=secret&sslmode=require": "postgres://h/db?sslmode=require",
		"postgres://u:se%zz@h/db":                         "postgres://...",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]bool{"postgres://h/db": true, "POSTGRESQL://h/db": true, "mysql://h/db": false, "/tmp/x": false, "": false} {
		if got := isPostgresURL(in); got != want {
			t.Errorf("isPostgresURL(%q) = %v, want %v", in, got, want)
		}
	}
}
