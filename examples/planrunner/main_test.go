package main

import (
	"testing"

	"github.com/refine-go/refine/examples/internal/e2etest"
)

// binary is the planrunner binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) { e2etest.Main(m, "planrunner", &binary) }
