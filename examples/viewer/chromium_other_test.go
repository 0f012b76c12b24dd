//go:build !unix

package main

import "testing"

// maybeScreenshot does nothing where the Chromium tests do not run.
func maybeScreenshot(*testing.T, string, string) {}
