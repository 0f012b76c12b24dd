package main

import (
	"testing"

	"github.com/refine-go/refine/examples/internal/e2etest"
)

// binary is the quickstart binary built once for the end-to-end tests.
var binary string

// TestMain builds the binary and checks for leaked goroutines.
func TestMain(m *testing.M) { e2etest.Main(m, "quickstart", &binary) }
