package etcdfx_test

import (
	"context"
	"os"

	"github.com/servicewright/servicewright/etcdkit/etcdfx"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/leader"
	"github.com/servicewright/servicewright/lock"
)

// lead is the leader's work: it runs for one term, until ctx ends.
func lead(ctx context.Context, term *leader.Term) error {
	<-ctx.Done()
	return nil
}

// The module gives the container an etcd client, a lock.Lock on etcd leases and a
// readiness check.
func ExampleModule() {
	host.Main(host.AppSpec{ServiceName: "digest", Container: hostfx.Container(
		etcdfx.Module(etcdfx.ModuleConfig{Endpoints: os.Getenv("ETCD_ENDPOINTS")}),
		hostfx.Provide(host.Registration{Order: 30}, func(lk lock.Lock, inst hostfx.Instance) (*leader.Leadership, error) {
			return leader.New(leader.Config{Lock: lk, Key: "digest", Owner: string(inst)}, lead)
		}),
	)})
}
