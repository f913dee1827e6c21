package httpfx_test

import (
	"fmt"
	"net/http"

	"go.uber.org/fx"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/entrypoint/httpentry/httpfx"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

type greeter struct{ greeting string }

// Routes come from any fx module as httpfx.Route values; the server Provider makes
// mounts them all. The Host binds it at order 10, drains and stops it.
func ExampleAsRoute() {
	host.Main(host.AppSpec{ServiceName: "hello", Container: hostfx.Container(
		hostfx.Provide(host.Registration{Order: 10}, httpfx.Provider(httpentry.Config{Addr: ":8080"})),
		fx.Supply(&greeter{greeting: "hello"}),
		httpfx.AsRoute(func(g *greeter) httpfx.Route {
			return httpfx.Route{Pattern: "GET /hello", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprintln(w, g.greeting)
			})}
		}),
	)})
}
