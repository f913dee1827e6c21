//go:build !e2e

package main

import (
	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
)

// testKnobs are empty in a user's build: the end-to-end tests' knobs
// (EXAMPLE_FAIL_AFTER, GET /panic, GET /burn) exist only with -tags e2e
// (knobs_e2e.go).
type testKnobs struct{}

func readTestKnobs(*fault.Problems) testKnobs      { return testKnobs{} }
func (testKnobs) entrypoints() []host.Registration { return nil }
func (testKnobs) routes() fx.Option                { return fx.Options() }
