package main

import (
	"context"
	"fmt"

	"github.com/refine-go/refine/examples/research/study"
	"github.com/refine-go/refine/iterate/fleet"
)

// The research kind: the research example's loop (package study), one
// question per session, asked of a Go source tree that every worker can
// read at the same path (by default each worker's $(go env GOROOT)/src).

// researchArgs are a research session's arguments, as package study takes
// them.
type researchArgs = study.Args

// researchState is a research session's state: its notes.
type researchState = study.Notes

// researchQuestion returns the arguments of a session researching one
// question over root (default: the workers' standard library), with an
// iteration limit (0: the research's default).
func researchQuestion(question, root string, maxIterations int) researchArgs {
	return researchArgs{Questions: "question: " + question, Root: root, MaxIterations: maxIterations}
}

// buildResearch is the build function of the research kind.
func buildResearch(ctx context.Context, a researchArgs) (fleet.Loop[researchState], error) {
	l, err := study.New(ctx, a)
	if err != nil {
		return fleet.Loop[researchState]{}, fmt.Errorf("research: %w", err)
	}
	return fleet.Loop[researchState]{Worker: l.Worker, Options: l.Options, Initial: l.Initial}, nil
}
