package main

import (
	"context"
	"fmt"
	"time"
)

// chaos is an essential entrypoint that fails after a set time: the EXAMPLE_FAIL_AFTER
// knob, for testing that a failing entrypoint stops the service with exit code 1. It
// is also the smallest complete Entrypoint there is.
type chaos struct {
	after time.Duration
}

func (c *chaos) Name() string                { return "chaos" }
func (c *chaos) Bind(context.Context) error  { return nil }
func (c *chaos) Drain(context.Context) error { return nil }
func (c *chaos) Stop(context.Context) error  { return nil }

func (c *chaos) Serve(ctx context.Context, stop <-chan struct{}) error {
	t := time.NewTimer(c.after)
	defer t.Stop()
	select {
	case <-stop:
		return nil
	case <-ctx.Done():
		return nil
	case <-t.C:
		return fmt.Errorf("failed on purpose after %s (EXAMPLE_FAIL_AFTER)", c.after)
	}
}
