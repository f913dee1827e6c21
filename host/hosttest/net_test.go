package hosttest_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// TestSlowRequestSurvivesSIGTERM is the test docs/testing.md shows, verbatim: a
// request in flight when the stop begins is answered in full, in virtual time.
func TestSlowRequestSurvivesSIGTERM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := hosttest.NewNetwork()
		entered := make(chan struct{})
		mux := http.NewServeMux()
		mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			time.Sleep(2 * time.Second) // virtual
			io.WriteString(w, "done")
		})
		srv, err := httpentry.New(httpentry.Config{}, mux, httpentry.WithListener(network.Listener()))
		if err != nil {
			t.Fatal(err)
		}
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "svc",
			Entrypoints: []host.Registration{{Entrypoint: srv}},
			Budgets:     host.Budgets{DrainDelay: time.Second},
		})
		x.WaitStage(host.StageServe)

		client := network.Client()
		defer client.CloseIdleConnections()
		got := make(chan int, 1)
		go func() {
			resp, err := client.Get("http://svc/slow")
			if err != nil {
				got <- 0
				return
			}
			resp.Body.Close()
			got <- resp.StatusCode
		}()
		<-entered
		x.Stop() // as SIGTERM would
		if code := <-got; code != http.StatusOK {
			t.Fatalf("the request in flight got %d", code)
		}
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNetworkIdleConnectionsClosedAtDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := hosttest.NewNetwork()
		srv, err := httpentry.New(httpentry.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
			httpentry.WithListener(network.Listener()))
		if err != nil {
			t.Fatal(err)
		}
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "svc",
			Entrypoints: []host.Registration{{Entrypoint: srv}},
		})
		if !x.WaitStage(host.StageServe) {
			t.Fatal(x.Wait())
		}
		// A keep-alive connection left idle after one request: the drain closes it,
		// so the client sees the end of the stream instead of a hang.
		conn, err := network.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: svc\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("while serving: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()

		x.Stop()
		if err := x.Wait(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if _, err := br.ReadByte(); err == nil {
			t.Error("the idle keep-alive connection is still open after the exit")
		}
		if _, err := network.DialContext(context.Background()); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Dial after the stop: %v, want net.ErrClosed", err)
		}
	})
}
