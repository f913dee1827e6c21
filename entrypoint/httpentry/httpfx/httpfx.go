// Package httpfx builds httpentry Servers in an fx container: Provider makes a
// Server from the container's handler or Routes, with its logger, metrics registry
// and tracer provider, for hostfx.Provide. It is apart from httpentry so that a
// service without fx links no container.
package httpfx

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// routesGroup is the fx value group Provider collects Routes from (AsRoute provides
// into it).
const routesGroup = "http.routes"

// defaultServer is the name of a Server whose Config has none: httpentry's default
// Config.Name.
const defaultServer = "http"

// Route is one pattern of the Server's http.ServeMux, contributed to the fx value
// group Provider collects Routes from, with AsRoute.
type Route struct {
	Pattern string // a ServeMux pattern, e.g. "GET /orders/{id}"
	Handler http.Handler
	// Server, when set, gives the route only to the server of Provider whose
	// Config.Name it is ("http" when the Config has none),
	// e.g. "admin" for an admin port; the others do not mount it. Empty: every
	// server made by Provider in the container mounts it. A name no server has
	// mounts the route nowhere.
	Server string
}

// Params are what Provider's constructor takes from the fx container. Every field is
// optional, but there must be a Handler or at least one Route.
type Params struct {
	fx.In

	// Handler serves the requests no Route matches (it is mounted at "/"), or every
	// request when there are no Routes.
	Handler http.Handler `optional:"true"`
	// Routes are mounted on a ServeMux. Every server made by Provider in the same
	// container gets those whose Route.Server is empty or its own Config.Name.
	Routes []Route `group:"http.routes"`

	// When present, they are the Server's httpentry.WithTelemetry.
	Logger         *zap.Logger           `optional:"true"`
	Registerer     prometheus.Registerer `optional:"true"`
	TracerProvider trace.TracerProvider  `optional:"true"`
}

// Provider returns an fx constructor for an httpentry.Server configured by cfg and
// opts, for hostfx.Provide:
//
//	hostfx.Provide(host.Registration{Order: 10}, httpfx.Provider(httpentry.Config{Addr: ":8080"}))
//
// The constructor takes its handler, and its logger, metrics registry and tracer
// provider when the container has them, from Params; opts are applied after those,
// so they win. A Route whose pattern is invalid or conflicts with another, and a
// missing handler, are reported in httpentry.New's *fault.ConfigError.
func Provider(cfg httpentry.Config, opts ...httpentry.Option) func(Params) (*httpentry.Server, error) {
	return func(p Params) (*httpentry.Server, error) {
		h, err := p.handler(cmp.Or(cfg.Name, defaultServer))
		if err != nil {
			return nil, err
		}
		all := []httpentry.Option{httpentry.WithTelemetry(entrypoint.Telemetry{
			Logger: p.Logger, Registerer: p.Registerer, TracerProvider: p.TracerProvider})}
		return httpentry.New(cfg, h, append(all, opts...)...)
	}
}

// handler mounts the routes for the server named server, and Handler as the
// fallback, on a ServeMux.
func (p Params) handler(server string) (http.Handler, error) {
	routes := make([]Route, 0, len(p.Routes))
	for _, r := range p.Routes {
		if r.Server == "" || r.Server == server {
			routes = append(routes, r)
		}
	}
	if len(routes) == 0 {
		if p.Handler == nil {
			return nil, &fault.ConfigError{Problems: []fault.Problem{{
				Field:  "handler",
				Reason: fmt.Sprintf("none: provide an http.Handler or Routes in the fx group %q", routesGroup),
			}}}
		}
		return p.Handler, nil
	}
	mux := http.NewServeMux()
	var l fault.Problems
	mount := func(field, pattern string, h http.Handler) {
		if h == nil {
			l.Addf(field, "handler must not be nil")
			return
		}
		// ServeMux panics on a bad or conflicting pattern.
		err := safe.Call("", func() error { mux.Handle(pattern, h); return nil })
		if pe, ok := errors.AsType[*fault.PanicError](err); ok {
			l.Addf(field, "%v", pe.Value)
		}
	}
	for _, r := range routes {
		mount(fmt.Sprintf("Routes[%q]", r.Pattern), r.Pattern, r.Handler)
	}
	if p.Handler != nil {
		mount("Handler", "/", p.Handler)
	}
	return mux, l.Err()
}

// AsRoute provides, into the fx value group Provider collects Routes from, the Route
// that ctor makes.
// ctor takes its dependencies from the container and returns a Route, optionally
// with an error:
//
//	httpfx.AsRoute(func(db *Store) httpfx.Route {
//		return httpfx.Route{Pattern: "GET /orders/{id}", Handler: getOrder(db)}
//	})
//
// A ctor of any other shape is an error when the fx app is built. Set Route.Server
// to give the route to one server only.
func AsRoute(ctor any) fx.Option {
	t := reflect.TypeOf(ctor)
	if t == nil || t.Kind() != reflect.Func || t.NumOut() == 0 || t.Out(0) != reflect.TypeFor[Route]() {
		return fx.Error(fmt.Errorf("httpfx.AsRoute: constructor must be a func returning httpfx.Route, got %T", ctor))
	}
	return fx.Provide(fx.Annotate(ctor, fx.ResultTags(`group:"`+routesGroup+`"`)))
}
