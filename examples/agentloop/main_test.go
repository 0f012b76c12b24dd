package main

import (
	"os"
	"testing"

	"github.com/refine-go/refine/examples/internal/e2etest"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// binary is the agentloop binary built for the tests.
var binary string

func TestMain(m *testing.M) {
	if iteratetest.CrashChild() { // a child of TestAICLICrash needs no binary
		os.Exit(m.Run())
	}
	e2etest.Main(m, "agentloop", &binary)
}
