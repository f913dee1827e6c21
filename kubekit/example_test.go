package kubekit_test

import (
	"context"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/servicewright/servicewright/kubekit"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/leader"
)

// lead is the leader's work: it runs for one term, until ctx ends.
func lead(ctx context.Context, term *leader.Term) error {
	<-ctx.Done()
	return nil
}

// One replica of the fleet at a time runs lead, on a coordination.k8s.io Lease in
// the pod's namespace (the service account needs get, create and update on leases).
func ExampleNewLock() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		panic(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	lk, err := kubekit.NewLock(client, kubekit.LockConfig{Namespace: os.Getenv("POD_NAMESPACE")})
	if err != nil {
		panic(err)
	}
	l, err := leader.New(leader.Config{Lock: lk, Key: "digest", Owner: os.Getenv("HOSTNAME")}, lead)
	if err != nil {
		panic(err)
	}
	host.Main(host.AppSpec{ServiceName: "digest", Entrypoints: []host.Registration{{Entrypoint: l}}})
}
