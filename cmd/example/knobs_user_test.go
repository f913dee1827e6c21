//go:build !e2e

package main

import (
	"testing"

	"go.uber.org/fx"
)

// TestUserBuildIgnoresTestKnobs: in a build without the e2e tag, EXAMPLE_FAIL_AFTER
// registers no entrypoint and no test route is added (internal/e2e's
// TestUserBuildHasNoTestKnobs runs such a build and finds GET /burn and GET /panic
// answered 404).
func TestUserBuildIgnoresTestKnobs(t *testing.T) {
	t.Setenv("EXAMPLE_FAIL_AFTER", "1ms")
	k, err := readKnobs()
	if err != nil {
		t.Fatal(err)
	}
	if e := spec(k).Entrypoints; len(e) != 0 {
		t.Errorf("the user's build registers %d entrypoints of its own for EXAMPLE_FAIL_AFTER, want none", len(e))
	}
	if r := k.testKnobs.routes(); r.String() != fx.Options().String() {
		t.Errorf("the user's build adds test routes: %v", r)
	}
}
