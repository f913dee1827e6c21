package httpentry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
)

// A Server driven through the entrypoint sequence, as the Host drives it.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	})
	srv, err := httpentry.New(httpentry.Config{Addr: "127.0.0.1:0"}, mux)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := srv.Bind(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	stop := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), stop) }()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() {
		resp, err := client.Get("http://" + srv.Addr().String() + "/hello")
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(body))
	}

	get()
	close(stop) // shutdown begins
	fmt.Println("serve:", <-served)
	get() // the drain delay: still served

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("drain:", srv.Drain(ctx))
	fmt.Println("stop:", srv.Stop(ctx))
	// Output:
	// 200 hello
	// serve: <nil>
	// 200 hello
	// drain: <nil>
	// stop: <nil>
}

// A drain hook that moves streaming clients to other replicas before Drain: the
// Host calls it with the time it may take.
func ExampleServer_DrainStreams() {
	srv, err := httpentry.New(httpentry.Config{Addr: "127.0.0.1:0"}, http.NotFoundHandler())
	if err != nil {
		fmt.Println(err)
		return
	}
	// With the hooks package: hooks.DrainHook{Name: "http-streams", Run: srv.DrainStreams}.
	var phase func(ctx context.Context, allowed time.Duration) error = srv.DrainStreams
	fmt.Println(phase(context.Background(), time.Second)) // not serving: nothing to do
	// Output:
	// <nil>
}
