package kubefx

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/lock"
)

func kubeconfig(t *testing.T, user string, groups ...string) string {
	t.Helper()
	testenv.Require(t, apiErr)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := api.WriteKubeconfig(path, "", user, groups...); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestModule(t *testing.T) {
	t.Run("provides the lock and a check named kubernetes", func(t *testing.T) {
		var (
			lk     lock.Lock
			checks []hostfx.NamedCheck
		)
		app := fxtest.New(t, Module(ModuleConfig{Kubeconfig: kubeconfig(t, "admin", "system:masters"), Namespace: "default"}),
			fx.Populate(&lk), fx.Invoke(fx.Annotate(func(cs []hostfx.NamedCheck) { checks = cs }, fx.ParamTags(`group:"checks"`))))
		app.RequireStart()
		defer app.RequireStop()
		ctx := context.Background()
		l, err := lk.Acquire(ctx, "module-"+time.Now().Format("150405.000000"), "a", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := lk.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		if len(checks) != 1 || checks[0].Name != "kubernetes" {
			t.Fatalf("checks %+v, want one named kubernetes", checks)
		}
		if err := checks[0].Check.Health(ctx); err != nil {
			t.Fatalf("Health = %v", err)
		}
	})

	t.Run("without RBAC permission the check names it", func(t *testing.T) {
		var checks []hostfx.NamedCheck
		app := fxtest.New(t, Module(ModuleConfig{Kubeconfig: kubeconfig(t, "nobody"), Namespace: "default"}),
			fx.Invoke(fx.Annotate(func(cs []hostfx.NamedCheck) { checks = cs }, fx.ParamTags(`group:"checks"`))))
		app.RequireStart()
		defer app.RequireStop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := checks[0].Check.Health(ctx); err == nil || !strings.Contains(err.Error(), "leases.coordination.k8s.io") {
			t.Fatalf("Health = %v, want an error naming the leases permission", err)
		}
	})

	for _, c := range []struct {
		name string
		cfg  ModuleConfig
		want []string
	}{
		{"no kubeconfig outside a pod, no namespace", ModuleConfig{}, []string{"KUBECONFIG", "POD_NAMESPACE"}},
		{"a kubeconfig that does not exist", ModuleConfig{Kubeconfig: "/nonexistent/kubeconfig", Namespace: "default"}, []string{"KUBECONFIG"}},
	} {
		t.Run(c.name+" is a configuration error naming each variable", func(t *testing.T) {
			err := fx.New(Module(c.cfg), fx.NopLogger).Err()
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || len(ce.Problems) != len(c.want) {
				t.Fatalf("err = %v, want problems naming %v", err, c.want)
			}
			for i, p := range ce.Problems {
				if p.Field != c.want[i] {
					t.Fatalf("problems %v, want %v", ce.Problems, c.want)
				}
			}
		})
	}
}
