package hosttest_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// TestNetworkRequestInFlightAtSIGTERM is the test docs/testing.md shows: an HTTP
// request in flight when the stop begins is answered in full, and one that arrives
// after the drain began is refused cleanly, all in virtual time.
func TestNetworkRequestInFlightAtSIGTERM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := hosttest.NewNetwork()
		entered := make(chan struct{})
		mux := http.NewServeMux()
		mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			time.Sleep(2 * time.Second) // virtual: the bubble's clock
			io.WriteString(w, "done")
		})
		srv, err := httpentry.New(httpentry.Config{}, mux, httpentry.WithListener(network.Listener()))
		if err != nil {
			t.Fatal(err)
		}
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "svc",
			Entrypoints: []host.Registration{{Entrypoint: srv}},
			Budgets:     host.Budgets{DrainDelay: time.Second, DrainGrace: 10 * time.Second},
		})
		if !x.WaitStage(host.StageServe) {
			t.Fatal(x.Wait())
		}

		client := network.Client()
		defer client.CloseIdleConnections()
		type answer struct {
			status int
			body   string
			err    error
		}
		got := make(chan answer, 1)
		go func() {
			resp, err := client.Get("http://svc/slow")
			if err != nil {
				got <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			got <- answer{resp.StatusCode, string(b), err}
		}()
		<-entered
		began := time.Now()
		x.Stop() // as SIGTERM would

		a := <-got
		if a.err != nil || a.status != http.StatusOK || a.body != "done" {
			t.Fatalf("the request in flight at the stop got %d %q, %v; want 200 \"done\"", a.status, a.body, a.err)
		}
		if d := time.Since(began); d != 2*time.Second {
			t.Errorf("answered %s after the stop, want 2s (the handler's own time)", d)
		}
		if err := x.Wait(); err != nil {
			t.Fatalf("Run: %v", err)
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
		if _, err := network.DialContext(context.Background()); !errors.Is(err, hosttest.ErrNetworkClosed) {
			t.Errorf("Dial after the stop: %v, want ErrNetworkClosed", err)
		}
	})
}
