package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The example's unit tests: its knobs, its manifests, its handlers. The end-to-end
// tests that run the built example as a process live in internal/e2e.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
