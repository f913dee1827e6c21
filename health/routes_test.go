package health_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

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
