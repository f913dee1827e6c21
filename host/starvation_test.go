package host_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

func TestNoEntrypointStarvesAnother(t *testing.T) {
	t.Run("every Drain starts at once and gets the whole window, whatever the others take", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			const grace = 10 * time.Second
			var began, consumerAt, httpAt, httpDeadline, httpDone time.Time
			consumer := newFake("consumer", j)
			consumer.drain = func(ctx context.Context) error {
				consumerAt = time.Now()
				time.Sleep(9 * time.Second) // a long message in hand, honouring the window
				return nil
			}
			api := newFake("http", j)
			api.drain = func(ctx context.Context) error {
				httpAt = time.Now()
				httpDeadline, _ = ctx.Deadline()
				<-ctx.Done() // a request that needs the whole window
				httpDone = time.Now()
				return ctx.Err()
			}
			x := start(t, j, host.AppSpec{
				// The consumer binds last, so a reverse-order drain would have served it first.
				Entrypoints: []host.Registration{{Entrypoint: api, Order: 1}, {Entrypoint: consumer, Order: 2}},
				Budgets:     host.Budgets{DrainDelay: 2 * time.Second, DrainGrace: grace},
			})
			x.WaitStage(host.StageServe)
			began = time.Now()
			x.Stop()
			_ = x.Wait()
			if consumerAt != httpAt || httpAt.Sub(began) != 2*time.Second {
				t.Errorf("drains began %s and %s after the stop; want both right after the 2s drain delay",
					consumerAt.Sub(began), httpAt.Sub(began))
			}
			if w := httpDeadline.Sub(httpAt); w != grace {
				t.Errorf("http's window = %s, want the whole %s although the consumer took 9s", w, grace)
			}
			if w := httpDone.Sub(httpAt); w != grace {
				t.Errorf("http drained for %s, want %s", w, grace)
			}
		})
	})

	t.Run("a request reaching the HTTP server during another entrypoint's drain is answered or refused, never cut", func(t *testing.T) {
		// Real sockets, so real time: the budgets are short.
		j := &journal{}
		inDrain := make(chan struct{})
		release := make(chan struct{})
		consumer := newFake("consumer", j)
		consumer.drain = func(ctx context.Context) error {
			close(inDrain)
			select { // holds a message well past the moment of the request
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}
		handlerStarted := make(chan struct{}, 1)
		api, err := httpentry.New(httpentry.Config{Addr: "127.0.0.1:0"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case handlerStarted <- struct{}{}:
			default:
			}
			time.Sleep(300 * time.Millisecond) // in flight at the drain, fits the grace
			_, _ = io.WriteString(w, "done")
		}))
		if err != nil {
			t.Fatal(err)
		}
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "starve",
			Entrypoints: []host.Registration{{Entrypoint: api, Order: 1}, {Entrypoint: consumer, Order: 2}},
			Budgets:     host.Budgets{DrainGrace: 3 * time.Second, StepTimeout: time.Second},
		})
		x.WaitStage(host.StageServe)
		url := "http://" + api.Addr().String() + "/"

		// One request in flight when the stop comes: it gets its 200.
		inflight := make(chan error, 1)
		go func() {
			resp, err := http.Get(url)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != 200 || string(body) != "done" {
					err = errors.New("in-flight request got " + resp.Status + " " + string(body))
				}
			}
			inflight <- err
		}()
		<-handlerStarted
		x.Stop()
		<-inDrain
		if err := <-inflight; err != nil {
			t.Error(err)
		}

		// A new request while the consumer still drains (and the HTTP server has
		// drained its own): a complete answer, or a clean refusal of the connection
		// — never an empty reply.
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
		switch {
		case err == nil:
			body, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if rerr != nil || (resp.StatusCode != 200 && resp.StatusCode != 503) {
				t.Errorf("request during the drain: %s %q %v; want 200 or 503", resp.Status, body, rerr)
			}
			if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
		case errors.Is(err, syscall.ECONNREFUSED):
		default:
			t.Errorf("request during the drain: %v; want a response or a refused connection", err)
		}
		close(release)
		if err := x.Wait(); err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}
