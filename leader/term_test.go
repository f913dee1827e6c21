package leader

import (
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestTermLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		term := newTerm(lock.Lease{Key: "k", Owner: "a", Token: 7}, time.Now().Add(time.Second))
		if !term.Live() {
			t.Fatal("not live before its deadline")
		}
		// A pause: nobody runs between these two lines, and nothing closes Ended.
		time.Sleep(time.Second)
		if term.Live() {
			t.Fatal("live at its deadline: Live must read the clock, not wait for Ended")
		}
		term.setDeadline(time.Now().Add(time.Second)) // a renewal moves it
		if !term.Live() {
			t.Fatal("not live after the deadline moved")
		}
		term.end()
		term.end() // idempotent
		if term.Live() {
			t.Fatal("live after end")
		}
		<-term.Ended()
	})
}

func TestCampaignCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := lock.NewMemory()
		if _, err := mem.Acquire(context.Background(), "job", "other", time.Hour); err != nil {
			t.Fatal(err)
		}
		spy := &spyLock{Lock: mem}
		var g termLog
		start := time.Now()
		startReplica(t, vSpec(spy, "a"), g.untilEnded)
		time.Sleep(20*vCE + vCE/2)
		calls := spy.find("inspect", "job", "", true)[1:] // the first is Bind's
		if len(calls) < 21 || len(calls) > 26 {
			t.Fatalf("%d campaigns in 20.5 intervals", len(calls))
		}
		if !calls[0].at.Equal(start) {
			t.Fatalf("first campaign at %v, want at once", calls[0].at.Sub(start))
		}
		for i := 1; i < len(calls); i++ {
			if d := calls[i].at.Sub(calls[i-1].at); d < vCE*8/10 || d > vCE {
				t.Fatalf("campaign %d came %v after the one before, want within [0.8, 1] × %v", i, d, vCE)
			}
		}
		if n := len(spy.find("acquire", "", "", false)); n != 0 {
			t.Fatalf("%d acquires of a lease seen held", n)
		}
	})
}

func TestTermRenewal(t *testing.T) {
	t.Run("renews every RenewEvery and reports itself held", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spy := &spyLock{Lock: lock.NewMemory()}
			var g termLog
			start := time.Now()
			r := startReplica(t, vSpec(spy, "a"), g.untilEnded)
			time.Sleep(5*vRenew + time.Millisecond)
			renews := spy.find("renew", "job", "a", true)
			if len(renews) != 5 {
				t.Fatalf("%d renewals in 5 RenewEvery", len(renews))
			}
			for i, c := range renews {
				if want := start.Add(time.Duration(i+1) * vRenew); !c.at.Equal(want) {
					t.Fatalf("renewal %d at %v, want %v", i, c.at.Sub(start), want.Sub(start))
				}
			}
			if st := r.l.Leadership()["job"]; !st.Held || st.Token != 1 || r.gauge() != 1 || r.l.InFlight() != 1 {
				t.Fatalf("status %+v, gauge %v, in flight %d", st, r.gauge(), r.l.InFlight())
			}
		})
	})

	t.Run("a slow answer shortens the term: deadlines count from the send", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spy := &spyLock{Lock: lock.NewMemory(), renew: func(context.Context, lock.Lease) error {
				time.Sleep(500 * time.Millisecond)
				return nil
			}}
			start := time.Now()
			deadline := make(chan time.Time, 1)
			startReplica(t, vSpec(spy, "a"), func(_ context.Context, term *Term) error {
				time.Sleep(vRenew + time.Second) // the first renewal was sent at 4s, answered at 4.5s
				deadline <- term.Deadline()
				<-term.Ended()
				return nil
			})
			if got, want := (<-deadline).Sub(start), vRenew+vLife; got != want {
				t.Fatalf("deadline after a slow renewal at %v, want %v (sent + life)", got, want)
			}
		})
	})

	t.Run("Live is false right after a pause past the soft deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Renewals never answer, as in a process that stalled on them.
			spy := &spyLock{Lock: lock.NewMemory(), renew: func(ctx context.Context, _ lock.Lease) error {
				<-ctx.Done()
				return ctx.Err()
			}}
			got := make(chan string, 1)
			startReplica(t, vSpec(spy, "a"), func(_ context.Context, term *Term) error {
				units := 0
				for term.Live() {
					units++
					time.Sleep(time.Until(term.Deadline())) // one long unit: the pause
				}
				got <- fmt.Sprintf("units=%d live=%v at=%v", units, term.Live(), time.Since(term.Deadline()))
				<-term.Ended()
				return nil
			})
			if s := <-got; s != "units=1 live=false at=0s" {
				t.Fatalf("body saw %s; want one unit, then not live at the deadline itself", s)
			}
		})
	})
}

func TestTermEndsBeforeLeaseLapses(t *testing.T) {
	for _, c := range []struct {
		name    string
		honours string // what the body honours: "ended" or "ctx"
		endedAt time.Duration
		relAt   time.Duration
	}{
		{"body returns when told", "ended", vLife, vLife},
		{"body returns only when cancelled", "ctx", vLife, vLife + vYield},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := lock.NewMemory()
				// a is cut off from the lock after its first acquire.
				var acquires atomic.Int32
				failing := &spyLock{Lock: mem,
					renew: func(context.Context, lock.Lease) error { return errors.New("connection reset") },
					acquire: func(context.Context, string, string) (error, bool) {
						if acquires.Add(1) > 1 {
							return errors.New("connection reset"), false
						}
						return nil, false
					}}
				start := time.Now()
				endedCh := make(chan time.Duration, 1)
				a := startReplica(t, vSpec(failing, "a"), func(ctx context.Context, term *Term) error {
					<-term.Ended()
					endedCh <- time.Since(start)
					if c.honours == "ctx" {
						<-ctx.Done()
					}
					return nil
				})
				synctest.Wait() // a leads
				var gb termLog
				startReplica(t, vSpec(mem, "b"), gb.untilEnded)
				time.Sleep(vTTL + 2*vCE)

				if endedAt := <-endedCh; endedAt != c.endedAt {
					t.Fatalf("term told to end at %v, want the soft deadline %v", endedAt, c.endedAt)
				}
				rel := failing.find("release", "job", "a", true)
				if len(rel) != 1 || rel[0].at.Sub(start) != c.relAt || c.relAt >= vTTL-vMargin {
					t.Fatalf("releases %v, want one at %v, before TTL − Margin", rel, c.relAt)
				}
				bt := gb.all()
				if len(bt) != 1 || bt[0].begin.Sub(start) <= c.relAt || bt[0].begin.Sub(start) > c.relAt+vCE {
					t.Fatalf("b's terms %v; want one starting within a campaign interval of the release", bt)
				}
				if a.ended(reasonExpired) != 1 || a.held() {
					t.Fatalf("expired=%v held=%v", a.ended(reasonExpired), a.held())
				}
				if n := len(failing.find("renew", "job", "a", false)); n < 4 {
					t.Fatalf("%d renewal attempts; a failed one is retried", n)
				}
			})
		})
	}

	t.Run("a renewal that finds the lease gone ends the term at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			spy := &spyLock{Lock: lock.NewMemory(), renew: func(context.Context, lock.Lease) error {
				return fmt.Errorf("renew: %w", lock.ErrNotHeld)
			}}
			var g termLog
			start := time.Now()
			r := startReplica(t, vSpec(spy, "a"), g.untilEnded)
			time.Sleep(vRenew + time.Millisecond)
			terms := g.all()
			if len(terms) != 1 || terms[0].end.Sub(start) != vRenew || r.ended(reasonLost) != 1 {
				t.Fatalf("terms %v, lost=%v; want one ended at the first renewal", terms, r.ended(reasonLost))
			}
		})
	})
}
