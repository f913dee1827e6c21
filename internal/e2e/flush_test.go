package e2e

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/proctest"
	"github.com/servicewright/servicewright/internal/testenv"
)

// telemetryTo is the environment that sends one signal to addr: spans over
// OTLP/HTTP, or errors to Sentry.
func telemetryTo(backend, addr string) []string {
	if backend == "otlp" {
		return []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr}
	}
	return []string{"SENTRY_DSN=http://flushkey@" + addr + "/1"}
}

// signalOf is the name the report gives what each backend receives.
var signalOf = map[string]string{"otlp": "spans", "sentry": "errors"}

// checkUndelivered: the exit is the work's (code want), and the undelivered
// telemetry is named once in a warning and in the report.
func checkUndelivered(t *testing.T, p *proctest.Proc, backend string, code, want int) {
	t.Helper()
	if code != want {
		t.Errorf("exit %d, want %d: the exit code is the work's, not the telemetry backend's", code, want)
	}
	r := reportOf(t, p)
	lost, _ := r["telemetry_undelivered"].([]any)
	var named bool
	for _, l := range lost {
		named = named || strings.HasPrefix(l.(string), signalOf[backend]+":")
	}
	if !named {
		t.Errorf("report %v: want telemetry_undelivered naming %s", r, signalOf[backend])
	}
	var warnings int
	for _, e := range p.Entries() {
		if e["msg"] == "telemetry not delivered at exit; the exit is not failed for it" && e["level"] == "warn" {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings about the undelivered telemetry, want 1", warnings)
	}
	if strings.Contains(strings.Join(p.Lines(), "\n"), "flushkey") {
		t.Error("the DSN's key reached the log")
	}
}

// TestFlushThatCannotDeliver: with the OTLP collector or Sentry hanging (a listener
// that accepts and never answers) or refusing, a graceful exit of the service and a
// complete `example backfill` still exit 0, within their budgets; the telemetry that
// could not be delivered is a warning and a report field, the same for both.
func TestFlushThatCannotDeliver(t *testing.T) {
	pg := env.Postgres(t)
	backends := []string{"otlp", "sentry"}
	modes := map[string]func(testing.TB) string{"hung": testenv.BlackHole, "refused": testenv.RefusedAddr}

	for _, backend := range backends {
		for mode, addr := range modes {
			t.Run("serve/"+backend+"/"+mode, func(t *testing.T) {
				t.Parallel()
				httpAddr := freeAddr(t)
				p := proctest.Start(t, bin, append([]string{"PROBE_ADDR=" + freeAddr(t), "HTTP_ADDR=" + httpAddr,
					"GRPC_ADDR=127.0.0.1:0", "SW_LOG_LEVEL=debug"}, telemetryTo(backend, addr(t))...)...)
				mustLog(t, p, stage("serve"), 20*time.Second)
				if backend == "sentry" { // an event to flush: a handler's panic
					resp, err := http.Get("http://" + httpAddr + "/panic")
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
				}
				_ = p.Signal(syscall.SIGTERM)
				checkUndelivered(t, p, backend, exitCode(t, p), 0)
			})

			t.Run("backfill/"+backend+"/"+mode, func(t *testing.T) {
				t.Parallel()
				db := freshDatabase(t, pg.DSN(), "flush_"+backend+"_"+mode)
				knobs := append([]string{"EXAMPLE_BACKFILL_N=50"}, telemetryTo(backend, addr(t))...)
				want := 0
				if backend == "sentry" {
					// An event to flush: the work's own permanent failure, which
					// must exit 3 whatever the tracker does.
					knobs, want = append(knobs, "EXAMPLE_BACKFILL_FAIL=permanent"), 3
				}
				p := backfill(t, db.dsn, knobs...)
				checkUndelivered(t, p, backend, exitCode(t, p), want)
				if want == 0 {
					if n := db.count(t); n != 50 {
						t.Errorf("%d orders stored, want 50", n)
					}
				}
			})
		}
	}
}
