package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/proctest"
)

// The README's own `curl -sN localhost:8080/events`, which sends no Accept header,
// is a stream all the same — the handler answers text/event-stream — so a SIGTERM
// ends it with the example's goodbye event, curl exits 0 on a whole response, and
// the example exits 0 within its budgets.
func TestReadmeEventsCurlEndsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the example and curl")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	addr, probe := freeAddr(t), freeAddr(t)
	p := proctest.Start(t, bin, "HTTP_ADDR="+addr, "PROBE_ADDR="+probe, "GRPC_ADDR=127.0.0.1:0")
	waitReady(t, "example", probe, p)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a sanity bound only
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, curl, "-sN", "http://"+addr+"/events")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	curlDone := make(chan error, 1)
	go func() { curlDone <- cmd.Wait() }()

	// The stream is open once /debug/lifecycle counts it in flight; events flow
	// every 100 ms from then on.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if a, err := get(t, "http://"+probe+"/debug/lifecycle"); err == nil && strings.Contains(a.raw, `"name":"http","state":"serving","in_flight":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream was never counted in flight")
		}
		select {
		case err := <-curlDone:
			t.Fatalf("curl ended before the SIGTERM: %v, %q", err, out.String())
		case <-time.After(10 * time.Millisecond): // polling another process's state
		}
	}

	sent := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	curlErr := <-curlDone
	curlTook := time.Since(sent)
	code := exitCode(t, p)
	exitTook := time.Since(sent)

	curlExit := 0
	var ee *exec.ExitError
	if errors.As(curlErr, &ee) {
		curlExit = ee.ExitCode()
	} else if curlErr != nil {
		t.Fatal(curlErr)
	}
	t.Logf("curl -sN /events: exit %d %s after the SIGTERM; example: exit %d after %s",
		curlExit, curlTook.Round(time.Millisecond), code, exitTook.Round(time.Millisecond))
	body := out.String()
	if curlExit != 0 {
		t.Errorf("curl exited %d (18: the stream was cut mid-response), stderr %q", curlExit, errOut.String())
	}
	if !strings.HasSuffix(body, "event: bye\ndata: draining, reconnect\n\n") {
		t.Errorf("the stream did not end with the goodbye event; its end: %q", body[max(0, len(body)-120):])
	}
	if !strings.Contains(body, "data: 1\n\n") {
		t.Errorf("no event before the goodbye: %q", body[:min(len(body), 120)])
	}
	if code != 0 {
		t.Errorf("the example exited %d", code)
	}
}
