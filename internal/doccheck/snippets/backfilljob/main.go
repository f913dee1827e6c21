// Command backfilljob is the README's "Jobs" example, compiled so it cannot rot.
package main

import (
	"context"
	"errors"
	"os"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
)

type row struct{ ID string }

var errBadRow = errors.New("malformed row")

func rows(context.Context) ([]row, error) { return nil, nil }
func upsert(context.Context, row) error   { return nil }
func serve()                              { os.Exit(0) }
func valid(r row) bool                    { return r.ID != "" }

func main() {
	if len(os.Args) < 2 || os.Args[1] != "backfill" {
		serve() // the service, as usual
	}
	backfill, err := entrypoint.NewTask(entrypoint.TaskConfig{Name: "backfill"},
		func(ctx context.Context) error {
			todo, err := rows(ctx)
			if err != nil {
				return err // exit 1: the Job retries
			}
			for _, r := range todo {
				if err := entrypoint.Checkpoint(ctx); err != nil {
					return err // a stop: exit 75, the Job retries
				}
				if !valid(r) {
					return fault.Permanent(errBadRow) // exit 3: FailJob
				}
				if err := upsert(ctx, r); err != nil { // idempotent: a rerun skips it
					return err
				}
			}
			return nil // exit 0
		})
	if err != nil {
		os.Exit(host.ExitCode(err))
	}
	host.Main(host.AppSpec{
		ServiceName: "orders-backfill",
		Entrypoints: []host.Registration{{Entrypoint: backfill}},
	})
}
