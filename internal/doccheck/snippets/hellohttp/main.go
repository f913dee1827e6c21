// Command hellohttp is the README's HTTP service in twenty lines, compiled so it
// cannot rot.
package main

import (
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/host"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	api, err := httpentry.New(httpentry.Config{Addr: ":8080"}, mux)
	if err != nil {
		log.Fatal(err) // a *fault.ConfigError naming each bad field
	}
	host.Main(host.AppSpec{
		ServiceName: "hello",
		Entrypoints: []host.Registration{{Entrypoint: api}},
		Budgets:     host.Budgets{DrainDelay: 5 * time.Second},
	})
}
