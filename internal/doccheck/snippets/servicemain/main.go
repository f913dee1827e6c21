// Command servicemain is the README's "A service in main", compiled so it cannot rot.
package main

import (
	"context"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/host"
)

func sweep(context.Context) error      { return nil }
func primeCache(context.Context) error { return nil }

func main() {
	host.Main(host.AppSpec{
		ServiceName: "orders",
		Entrypoints: []host.Registration{
			{Entrypoint: entrypoint.Loop("sweeper", sweep, time.Minute, 5*time.Second), Order: 10},
		},
		Warmups: []host.Step{{Name: "prime-cache", Start: primeCache}},
		Budgets: host.Budgets{DrainDelay: 5 * time.Second},
	})
}
