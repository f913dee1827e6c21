package etcdkit_test

import (
	"context"
	"os"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/servicewright/servicewright/etcdkit"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/leader"
)

// lead is the leader's work: it runs for one term, until ctx ends.
func lead(ctx context.Context, term *leader.Term) error {
	<-ctx.Done()
	return nil
}

// One replica of the fleet at a time runs lead, on a lease kept in etcd.
func ExampleNewLock() {
	client, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(os.Getenv("ETCD_ENDPOINTS"), ",")})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	lk, err := etcdkit.NewLock(client, etcdkit.LockConfig{})
	if err != nil {
		panic(err)
	}
	l, err := leader.New(leader.Config{Lock: lk, Key: "digest", Owner: os.Getenv("HOSTNAME")}, lead)
	if err != nil {
		panic(err)
	}
	host.Main(host.AppSpec{ServiceName: "digest", Entrypoints: []host.Registration{{Entrypoint: l}}})
}
