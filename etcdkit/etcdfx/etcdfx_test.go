package etcdfx

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/servicewright/servicewright/etcdkit"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/lock"
)

func TestModule(t *testing.T) {
	testenv.Require(t, clusterErr)
	endpoints := strings.Join(cluster.Endpoints(), ",")

	t.Run("provides the client, the lock and a check named etcd; closes the client on stop", func(t *testing.T) {
		var (
			lk     lock.Lock
			client *clientv3.Client
			checks []hostfx.NamedCheck
		)
		app := fxtest.New(t, Module(ModuleConfig{Endpoints: endpoints, Lock: etcdkit.LockConfig{KeyPrefix: "test/"}}),
			fx.Populate(&lk, &client),
			fx.Invoke(fx.Annotate(func(cs []hostfx.NamedCheck) { checks = cs }, fx.ParamTags(`group:"checks"`))))
		app.RequireStart()
		ctx := context.Background()
		l, err := lk.Acquire(ctx, "module", "a", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := client.Get(ctx, "test/module/holder"); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "a:"+itoa(l.Token) {
			t.Fatalf("holder under the configured prefix: %v, %v", r, err)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		if len(checks) != 1 || checks[0].Name != "etcd" {
			t.Fatalf("checks %+v, want one named etcd", checks)
		}
		if err := checks[0].Check.Health(ctx); err != nil {
			t.Fatalf("Health = %v", err)
		}
		app.RequireStop()
		if _, err := client.Get(ctx, "x"); err == nil {
			t.Fatal("Get after stop succeeded; want the client closed")
		}
	})

	t.Run("an unreachable cluster fails the check within its ctx, not a hang", func(t *testing.T) {
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		var checks []hostfx.NamedCheck
		app := fxtest.New(t, Module(ModuleConfig{Endpoints: "http://127.0.0.1:" + itoa(uint64(port)), DialTimeout: 200 * time.Millisecond}),
			fx.Invoke(fx.Annotate(func(cs []hostfx.NamedCheck) { checks = cs }, fx.ParamTags(`group:"checks"`))))
		app.RequireStart()
		defer app.RequireStop()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if err := checks[0].Check.Health(ctx); err == nil {
			t.Fatalf("Health of an unreachable cluster = %v, want an error", err)
		}
	})

	for _, c := range []struct{ name, endpoints string }{
		{"no endpoints", ""},
		{"a malformed endpoint", "http://root:s3cret@host:2379,ftp://x"},
		{"an endpoint without a port", "http://host"},
	} {
		t.Run(c.name+" is a configuration error naming ETCD_ENDPOINTS, never echoing it", func(t *testing.T) {
			err := fx.New(Module(ModuleConfig{Endpoints: c.endpoints}), fx.NopLogger).Err()
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || len(ce.Problems) != 1 || ce.Problems[0].Field != "ETCD_ENDPOINTS" {
				t.Fatalf("err = %v, want one problem naming ETCD_ENDPOINTS", err)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error echoes the endpoints: %v", err)
			}
		})
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
