package main

import "testing"

func TestResumeCommand(t *testing.T) {
	got := resumeCommand([]string{"--root", "my tree", "--resume", "--json"})
	if want := "research --root 'my tree' --json --resume"; got != want {
		t.Errorf("resumeCommand = %q, want %q", got, want)
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
