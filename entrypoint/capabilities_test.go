package entrypoint_test

import (
	"context"
	"testing"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
)

// bare implements the four methods and nothing else.
type bare struct{}

func (bare) Name() string                                 { return "bare" }
func (bare) Bind(context.Context) error                   { return nil }
func (bare) Serve(context.Context, <-chan struct{}) error { return nil }
func (bare) Drain(context.Context) error                  { return nil }
func (bare) Stop(context.Context) error                   { return nil }

// rich implements every optional interface of the package.
type rich struct{ bare }

func (rich) InFlight() int                          { return 7 }
func (rich) DrainReport() string                    { return "drained" }
func (rich) StatusDetail() string                   { return "paused" }
func (rich) DrainTime() time.Duration               { return time.Second }
func (rich) SetDefaults(entrypoint.Telemetry) error { return nil }
func (rich) Finished() bool                         { return true }

func TestCapabilities(t *testing.T) {
	if c := entrypoint.Capabilities(nil); c != (entrypoint.Caps{}) {
		t.Fatalf("nil entrypoint: %+v, want none", c)
	}
	if c := entrypoint.Capabilities(bare{}); c != (entrypoint.Caps{}) {
		t.Fatalf("bare entrypoint: %+v, want none", c)
	}
	c := entrypoint.Capabilities(rich{})
	if c.InFlight == nil || c.InFlight.InFlight() != 7 {
		t.Errorf("InFlight: %v", c.InFlight)
	}
	if c.DrainReport == nil || c.DrainReport.DrainReport() != "drained" {
		t.Errorf("DrainReport: %v", c.DrainReport)
	}
	if c.StatusDetail == nil || c.StatusDetail.StatusDetail() != "paused" {
		t.Errorf("StatusDetail: %v", c.StatusDetail)
	}
	if c.DrainTimer == nil || c.DrainTimer.DrainTime() != time.Second {
		t.Errorf("DrainTimer: %v", c.DrainTimer)
	}
	if c.Defaults == nil || c.Finite == nil || !c.Finite.Finished() {
		t.Errorf("Defaults %v, Finite %v", c.Defaults, c.Finite)
	}

	task, err := entrypoint.NewTask(entrypoint.TaskConfig{Name: "t"}, func(context.Context) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	c = entrypoint.Capabilities(task)
	if c.Finite == nil || c.InFlight == nil || c.Defaults == nil {
		t.Errorf("Task: %+v, want Finite, InFlight and Defaults", c)
	}
	if c.DrainTimer != nil || c.DrainReport != nil {
		t.Errorf("Task: %+v, want no DrainTimer nor DrainReport", c)
	}
}
