package e2e

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/internal/proctest"
)

// withArgs returns an executable that runs the example with args, keeping its pid
// (exec), so signals and the exit code are the example's own.
// backfill runs `example backfill` against dsn with the knobs given.
func backfill(t *testing.T, dsn string, knobs ...string) *proctest.Proc {
	t.Helper()
	env := append([]string{"PROBE_ADDR=" + freeAddr(t), "DATABASE_URL=" + dsn}, knobs...)
	return proctest.StartArgs(t, []string{bin, "backfill"}, env...)
}

func reportOf(t *testing.T, p *proctest.Proc) map[string]any {
	t.Helper()
	r := p.Find(map[string]string{"msg": "shutdown report"})
	if r == nil {
		t.Fatal("no shutdown report")
	}
	return r
}

func TestBackfill(t *testing.T) {
	pg := env.Postgres(t)

	t.Run("a full run stores every order and exits 0", func(t *testing.T) {
		db := freshDatabase(t, pg.DSN(), "backfill_full")
		p := backfill(t, db.dsn, "EXAMPLE_BACKFILL_N=300")
		if code := exitCode(t, p); code != 0 {
			t.Fatalf("exit %d, want 0", code)
		}
		if n := db.count(t); n != 300 {
			t.Errorf("%d orders stored, want 300", n)
		}
		if r := reportOf(t, p); r["result"] != "success" {
			t.Errorf("report %v", r)
		}
		ready := p.Find(map[string]string{"msg": "service ready"})
		if ready == nil || ready["gomaxprocs"] == nil || ready["go_version"] != runtime.Version() {
			t.Errorf("ready line %v, want gomaxprocs and go_version", ready)
		}
	})

	t.Run("SIGTERM mid-run exits interrupted with part stored; a rerun completes the rest", func(t *testing.T) {
		db := freshDatabase(t, pg.DSN(), "backfill_term")
		const n = 400
		p := backfill(t, db.dsn, fmt.Sprintf("EXAMPLE_BACKFILL_N=%d", n), "EXAMPLE_BACKFILL_DELAY=10ms")
		mustLog(t, p, map[string]string{"msg": "backfill progress"}, 20*time.Second)
		sent := time.Now()
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		code := exitCode(t, p)
		took := time.Since(sent)
		if code != host.ExitInterrupted {
			t.Fatalf("exit %d, want %d (interrupted, retriable)", code, host.ExitInterrupted)
		}
		// The budget: the work stops at its next unit (10ms), well inside DrainGrace.
		if budget := backfillDrainGrace; took > budget {
			t.Errorf("exited %s after SIGTERM, more than the %s drain grace", took, budget)
		}
		stored := db.count(t)
		if stored == 0 || stored >= n {
			t.Errorf("%d orders stored after the interruption, want some but not all %d", stored, n)
		}
		if r := reportOf(t, p); r["result"] != "interrupted" || r["exit_code"] != float64(host.ExitInterrupted) {
			t.Errorf("report %v, want interrupted", r)
		}
		t.Logf("interrupted after %d of %d orders, exit %d %s after SIGTERM", stored, n, code, took)

		again := backfill(t, db.dsn, fmt.Sprintf("EXAMPLE_BACKFILL_N=%d", n))
		if code := exitCode(t, again); code != 0 {
			t.Fatalf("rerun exit %d, want 0", code)
		}
		if got := db.count(t); got != n {
			t.Errorf("%d orders after the rerun, want %d", got, n)
		}
		done := again.Find(map[string]string{"msg": "backfill done"})
		if done == nil || done["already_there"] != float64(stored) {
			t.Errorf("rerun's summary %v, want already_there=%d", done, stored)
		}
	})

	t.Run("SIGTERM during warmup exits interrupted with nothing stored", func(t *testing.T) {
		db := freshDatabase(t, pg.DSN(), "backfill_warmup")
		p := backfill(t, db.dsn, "EXAMPLE_WARMUP_DELAY=30s", "SW_LOG_LEVEL=debug")
		mustLog(t, p, stage("warmup"), 20*time.Second)
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := exitCode(t, p); code != host.ExitInterrupted {
			t.Errorf("exit %d, want %d: a Job stopped before its work must be retried", code, host.ExitInterrupted)
		}
		if n := db.count(t); n != 0 {
			t.Errorf("%d orders stored, want none", n)
		}
	})

	for _, c := range []struct {
		fail string
		code int
	}{{"transient", host.ExitFailure}, {"permanent", backfillPermanentExitCode}} {
		t.Run("a "+c.fail+" failure exits "+fmt.Sprint(c.code), func(t *testing.T) {
			db := freshDatabase(t, pg.DSN(), "backfill_"+c.fail)
			p := backfill(t, db.dsn, "EXAMPLE_BACKFILL_N=100", "EXAMPLE_BACKFILL_FAIL="+c.fail)
			if code := exitCode(t, p); code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
			if n := db.count(t); n != backfillFailAfter {
				t.Errorf("%d orders stored, want the %d before the failure", n, backfillFailAfter)
			}
			if r := reportOf(t, p); r["result"] != "failure" || r["exit_code"] != float64(c.code) {
				t.Errorf("report %v", r)
			}
		})
	}

	t.Run("an unknown argument exits 78 naming the known ones", func(t *testing.T) {
		p := proctest.StartArgs(t, []string{bin, "bakfill"})
		if code := exitCode(t, p); code != host.ExitConfig {
			t.Errorf("exit %d, want 78", code)
		}
		if !slices.ContainsFunc(p.Lines(), func(l string) bool { return strings.Contains(l, "known: serve (the default), backfill") }) {
			t.Errorf("stderr %v does not list the known commands", p.Lines())
		}
	})
}
