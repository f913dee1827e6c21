package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

func TestListenerRoutes(t *testing.T) {
	t.Run("an extra route is served beside the probes", func(t *testing.T) {
		prestop := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "drained") })
		l := startListener(t, health.ListenerConfig{Addr: "127.0.0.1:0"}, ready(), health.ListenerOptions{
			Routes: map[string]http.Handler{"/prestop": prestop},
		})
		base := "http://" + l.Addr().String()
		if code, body := text(t, client(), base+"/prestop"); code != 200 || body != "drained" {
			t.Errorf("/prestop = %d %q", code, body)
		}
		if code, _ := text(t, client(), base+"/readyz"); code != 200 {
			t.Errorf("/readyz = %d beside the route", code)
		}
		if code, _ := text(t, client(), base+"/prestop/x"); code != 404 {
			t.Errorf("/prestop/x = %d, want 404: a route names one path", code)
		}
	})

	t.Run("each path has one spelling: encoded, doubled and dotted ones are 404, not redirected", func(t *testing.T) {
		var hits atomic.Int32
		prestop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			_, _ = io.WriteString(w, r.URL.RawQuery)
		})
		l := startListener(t, health.ListenerConfig{Addr: "127.0.0.1:0"}, ready(), health.ListenerOptions{
			Routes: map[string]http.Handler{"/prestop": prestop},
		})
		base := "http://" + l.Addr().String()
		c := client()
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		for _, p := range []string{"/%70restop", "//prestop", "/prestop/", "/./prestop", "/x/../prestop",
			"/%2Fprestop", "/readyz/", "//readyz", "/debug/%6cifecycle"} {
			if code, _ := text(t, c, base+p); code != 404 {
				t.Errorf("%s = %d, want 404", p, code)
			}
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("the route ran %d times for other spellings of its path", n)
		}
		if code, body := text(t, c, base+"/prestop?x=1"); code != 200 || body != "x=1" || hits.Load() != 1 {
			t.Errorf("/prestop?x=1 = %d %q after %d hits, want the route with its query", code, body, hits.Load())
		}
	})

	t.Run("a route that shadows a probe or is no exact path is a ConfigError naming it", func(t *testing.T) {
		h := http.NotFoundHandler()
		cases := map[string]http.Handler{
			"/readyz": h, "/livez": h, "/startupz": h, "/metrics": h, "/debug/lifecycle": h,
			"/": h, "/admin/": h, "prestop": h, "POST /prestop": h, "/x/{id}": h, "/nil": nil,
		}
		for path, handler := range cases {
			_, err := health.NewListener(health.ListenerConfig{}, ready(), health.ListenerOptions{
				Routes: map[string]http.Handler{path: handler},
			})
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), `Routes["`+path+`"]`) {
				t.Errorf("route %q: %v, want a ConfigError naming it", path, err)
			}
		}
	})
}

func TestListenerFailingGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	down := health.CheckFunc(func(context.Context) error { return errors.New("refused") })
	l := startListener(t, health.ListenerConfig{Addr: "127.0.0.1:0"}, ready(), health.ListenerOptions{
		Checks:     map[string]health.Check{"db": down},
		Registerer: reg,
	})
	if code, _ := text(t, client(), "http://"+l.Addr().String()+"/readyz"); code != 200 {
		t.Errorf("/readyz = %d with a failing shared check, want 200 degraded", code)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() != "servicewright_readiness_check_failing" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "check" && lp.GetValue() == "db" && m.GetGauge().GetValue() == 1 {
					found = true
				}
			}
		}
	}
	if !found {
		t.Error("the probe listener's /readyz does not set servicewright_readiness_check_failing{check=\"db\"} to 1")
	}
}
