// Command servicemain is the README's "A service in main", compiled so it cannot rot.
package main

import (
	"context"
	"log"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/host"
)

func sweep(context.Context) error      { return nil }
func primeCache(context.Context) error { return nil }

func main() {
	sweeper, err := entrypoint.NewLoop(entrypoint.LoopConfig{Name: "sweeper", Every: time.Minute, Jitter: 5 * time.Second}, sweep)
	if err != nil {
		log.Fatal(err) // a *fault.ConfigError naming each bad field
	}
	host.Main(host.AppSpec{
		ServiceName: "orders",
		Entrypoints: []host.Registration{
			{Entrypoint: sweeper, Order: 10},
		},
		Warmups: []host.Step{{Name: "prime-cache", Start: primeCache}},
		Budgets: host.Budgets{DrainDelay: 5 * time.Second},
	})
}
