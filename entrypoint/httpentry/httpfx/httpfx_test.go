package httpfx

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func text(s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, s) })
}

// built is what build made: the Server, and the handler Provider gave it.
type built struct {
	srv     *httpentry.Server
	handler http.Handler
}

// build makes an fx app providing Provider's Server and returns it with the handler
// Provider mounted, or the error.
func build(t *testing.T, opts ...fx.Option) (built, error) {
	t.Helper()
	var b built
	app := fx.New(append(opts, fx.NopLogger, fx.Provide(Provider(httpentry.Config{Addr: "127.0.0.1:0"})),
		fx.Invoke(func(p Params) { b.handler, _ = p.handler(defaultServer) }), fx.Populate(&b.srv))...)
	return b, app.Err()
}

// serveOnce passes one request through the handler Provider mounted, without sockets.
func serveOnce(b built, target string) (int, string) {
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	return rec.Code, rec.Body.String()
}

// countingRegisterer counts the collectors registered through it.
type countingRegisterer struct {
	prometheus.Registerer
	n int
}

func (c *countingRegisterer) Register(col prometheus.Collector) error {
	c.n++
	return c.Registerer.Register(col)
}

func TestProvider(t *testing.T) {
	t.Run("routes from the group are mounted, with the Handler as fallback", func(t *testing.T) {
		s, err := build(t,
			AsRoute(func() Route { return Route{Pattern: "GET /a", Handler: text("a")} }),
			AsRoute(func(l *zap.Logger) (Route, error) { return Route{Pattern: "GET /b", Handler: text("b")}, nil }),
			fx.Supply(zap.NewNop()),
			fx.Provide(func() http.Handler { return text("fallback") }),
		)
		if err != nil {
			t.Fatal(err)
		}
		for target, want := range map[string]string{"/a": "a", "/b": "b", "/c": "fallback"} {
			if code, body := serveOnce(s, target); code != 200 || body != want {
				t.Errorf("GET %s = %d %q, want %q", target, code, body, want)
			}
		}
	})

	t.Run("a lone Handler serves everything", func(t *testing.T) {
		s, err := build(t, fx.Provide(func() http.Handler { return text("h") }))
		if err != nil {
			t.Fatal(err)
		}
		if _, body := serveOnce(s, "/anything"); body != "h" {
			t.Errorf("body = %q, want h", body)
		}
	})

	t.Run("the container's registry turns metrics on", func(t *testing.T) {
		reg := &countingRegisterer{Registerer: prometheus.NewRegistry()}
		_, err := build(t,
			fx.Provide(func() http.Handler { return text("h") }),
			fx.Supply(fx.Annotate(reg, fx.As(new(prometheus.Registerer)))),
		)
		if err != nil {
			t.Fatal(err)
		}
		if reg.n == 0 {
			t.Fatal("metrics off with a registry in the container")
		}
	})

	t.Run("conflicting routes are a config error", func(t *testing.T) {
		_, err := build(t,
			AsRoute(func() Route { return Route{Pattern: "GET /a", Handler: text("a")} }),
			AsRoute(func() Route { return Route{Pattern: "GET /a", Handler: text("again")} }),
		)
		if err == nil || !strings.Contains(err.Error(), `Routes["GET /a"]`) {
			t.Errorf("err = %v, want a problem naming the route", err)
		}
	})

	t.Run("no handler at all is a config error", func(t *testing.T) {
		_, err := build(t)
		if err == nil || !strings.Contains(err.Error(), "handler") {
			t.Errorf("err = %v, want a handler problem", err)
		}
	})

	t.Run("AsRoute refuses a constructor that does not make a Route", func(t *testing.T) {
		_, err := build(t, AsRoute(func() http.Handler { return text("x") }))
		if err == nil || !strings.Contains(err.Error(), "must be a func returning httpfx.Route") {
			t.Errorf("err = %v, want AsRoute's refusal", err)
		}
	})
}

// A Route with Server set is mounted only by the server of that name; one without
// by every server. Each server is run on a loopback port and asked.
func TestRoutesPerServer(t *testing.T) {
	var public, admin *httpentry.Server
	app := fx.New(fx.NopLogger,
		AsRoute(func() Route { return Route{Pattern: "GET /orders", Handler: text("orders")} }),
		AsRoute(func() Route { return Route{Pattern: "GET /flags", Handler: text("flags"), Server: "admin"} }),
		AsRoute(func() Route { return Route{Pattern: "GET /nowhere", Handler: text("x"), Server: "missing"} }),
		fx.Provide(
			fx.Annotate(Provider(httpentry.Config{Addr: "127.0.0.1:0"}), fx.ResultTags(`name:"public"`)),
			fx.Annotate(Provider(httpentry.Config{Name: "admin", Addr: "127.0.0.1:0"}), fx.ResultTags(`name:"admin"`)),
		),
		fx.Invoke(fx.Annotate(func(p, a *httpentry.Server) { public, admin = p, a }, fx.ParamTags(`name:"public"`, `name:"admin"`))),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		srv  *httpentry.Server
		want map[string]int
	}{
		{public, map[string]int{"/orders": 200, "/flags": 404, "/nowhere": 404}},
		{admin, map[string]int{"/orders": 200, "/flags": 200, "/nowhere": 404}},
	} {
		serving(t, c.srv, func(base string) {
			for path, want := range c.want {
				resp, err := http.Get(base + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("%s GET %s = %d, want %d", c.srv.Name(), path, resp.StatusCode, want)
				}
			}
		})
	}
}

// serving binds and serves s, calls f with its base URL, then stops it as the Host
// does and waits for Serve to return.
func serving(t *testing.T, s *httpentry.Server, f func(base string)) {
	t.Helper()
	ctx := context.Background()
	if err := s.Bind(ctx); err != nil {
		t.Fatal(err)
	}
	stop, served := make(chan struct{}), make(chan error, 1)
	go func() { served <- s.Serve(ctx, stop) }()
	f("http://" + s.Addr().String())
	close(stop)
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	if err := s.Drain(ctx); err != nil {
		t.Errorf("Drain = %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
}

// defaultServer, the name Route.Server is matched against when the Config has
// none, is the name httpentry gives such a Server.
func TestDefaultServerIsHTTPEntrysDefaultName(t *testing.T) {
	s, err := httpentry.New(httpentry.Config{Addr: "127.0.0.1:0"}, text("x"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != defaultServer {
		t.Fatalf("httpentry's default name is %q, httpfx's defaultServer %q", s.Name(), defaultServer)
	}
}
