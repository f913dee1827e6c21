package host_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// TestLineInFlightSurvivesSIGTERM is the test docs/testing.md shows, verbatim: a
// line half-sent when the stop begins is read to its end and answered, then the
// connection is told goodbye, in virtual time.
func TestLineInFlightSurvivesSIGTERM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := hosttest.NewNetwork()
		srv, err := newLines("", network.Listener())
		if err != nil {
			t.Fatal(err)
		}
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "lines",
			Entrypoints: []host.Registration{{Entrypoint: srv}},
			Budgets:     host.Budgets{DrainDelay: time.Second},
		})
		x.WaitStage(host.StageServe)

		conn, err := network.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "hel") // the line is in flight: its connection is busy
		x.Stop()                    // as SIGTERM would
		x.WaitStage(host.StageDrain)
		time.Sleep(2 * time.Second) // virtual: a slow client
		io.WriteString(conn, "lo\n")
		got, _ := io.ReadAll(conn)
		if string(got) != "HELLO\nBYE server going away\n" {
			t.Fatalf("the client read %q, want its answer, then the goodbye", got)
		}
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// The README's custom entrypoint, when a post_start hook fails: the Host stops the
// bound server without ever calling Serve, and the exit is the hook's failure (1),
// at once, not a timeout of a Stop waiting for work that never started. The
// listener is closed.
func TestCustomEntrypointFailedPostStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := hosttest.NewNetwork()
		srv, err := newLines("", network.Listener())
		if err != nil {
			t.Fatal(err)
		}
		lc := &hooks.Registry{}
		refused := errors.New("announce refused")
		lc.AddPostStart("announce", func(context.Context) error { return refused })
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "lines",
			Entrypoints: []host.Registration{{Entrypoint: srv}},
			Lifecycle:   lc,
		})
		began := time.Now()
		err = x.Wait()
		if !errors.Is(err, refused) {
			t.Fatalf("Run = %v, want the post_start error", err)
		}
		if code := host.ExitCode(err); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		if d := time.Since(began); d != 0 {
			t.Errorf("the exit took %s of virtual time; Stop before Serve must not wait", d)
		}
		if _, err := network.Dial(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Dial after the exit = %v, want the listener closed", err)
		}
	})
}

// At the drain every line received gets its answer and every idle connection the
// goodbye; nothing is cut. Stop a second time does nothing.
func TestCustomEntrypointDropsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := hosttest.NewNetwork()
		srv, err := newLines("", network.Listener())
		if err != nil {
			t.Fatal(err)
		}
		x := hosttest.Start(t, host.AppSpec{
			ServiceName: "lines",
			Entrypoints: []host.Registration{{Entrypoint: srv}},
			Budgets:     host.Budgets{DrainDelay: time.Second},
		})
		x.WaitStage(host.StageServe)

		const n = 5
		idle := make([]*bufio.Reader, n) // each answered once, then idle at the stop
		for i := range idle {
			c, err := network.Dial()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			idle[i] = bufio.NewReader(c)
			io.WriteString(c, "ping\n")
			if got, err := idle[i].ReadString('\n'); got != "PING\n" || err != nil {
				t.Fatalf("answer %d = %q, %v", i, got, err)
			}
		}
		busy, err := network.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		io.WriteString(busy, "half a") // in flight at the stop
		synctest.Wait()

		x.Stop()
		for i, r := range idle {
			if rest, _ := io.ReadAll(r); string(rest) != "BYE server going away\n" {
				t.Errorf("idle connection %d read %q at the drain, want the goodbye", i, rest)
			}
		}
		io.WriteString(busy, " line\n")
		if got, _ := io.ReadAll(busy); string(got) != "HALF A LINE\nBYE server going away\n" {
			t.Errorf("the connection in flight read %q, want its answer, then the goodbye", got)
		}
		if err := x.Wait(); err != nil {
			t.Fatal(err)
		}
		if rep := srv.DrainReport(); !strings.Contains(rep, "closed_idle=5 closed_after_answer=1 ") {
			t.Errorf("DrainReport() = %q, want 5 idle closed and 1 after its answer", rep)
		}
		if err := srv.Stop(context.Background()); err != nil { // the Host stopped it once already
			t.Errorf("a second Stop = %v", err)
		}
	})
}
