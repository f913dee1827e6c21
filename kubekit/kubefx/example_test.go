package kubefx_test

import (
	"context"
	"os"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/kubekit/kubefx"
	"github.com/servicewright/servicewright/leader"
	"github.com/servicewright/servicewright/lock"
)

// lead is the leader's work: it runs for one term, until ctx ends.
func lead(ctx context.Context, term *leader.Term) error {
	<-ctx.Done()
	return nil
}

// The module gives the container a lock.Lock on coordination.k8s.io Leases in the
// namespace (in-cluster credentials unless Kubeconfig is set) and a readiness check.
func ExampleModule() {
	host.Main(host.AppSpec{ServiceName: "digest", Container: hostfx.Container(
		kubefx.Module(kubefx.ModuleConfig{Namespace: os.Getenv("POD_NAMESPACE")}),
		hostfx.Provide(host.Registration{Order: 30}, func(lk lock.Lock, inst hostfx.Instance) (*leader.Leadership, error) {
			return leader.New(leader.Config{Lock: lk, Key: "digest", Owner: string(inst)}, lead)
		}),
	)})
}
