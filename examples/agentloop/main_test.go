package main

import (
	"testing"

	"github.com/refine-go/refine/examples/internal/e2etest"
)

// binary is the agentloop binary built for the tests.
var binary string

func TestMain(m *testing.M) { e2etest.Main(m, "agentloop", &binary) }
