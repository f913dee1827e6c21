package leader

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/pgkit"
)

// boundLock is a Memory lock that declares an earliest release shorter than its TTL,
// as pgkit.Lock does when the server's dead-client detection is shorter.
type boundLock struct {
	*lock.Memory
	earliest time.Duration
}

func (b boundLock) EarliestRelease(ttl time.Duration) time.Duration { return min(ttl, b.earliest) }

func TestEarliestRelease(t *testing.T) {
	t.Run("timings that end a term after the lock's earliest release are refused, naming the fields", func(t *testing.T) {
		s := vSpec(boundLock{lock.NewMemory(), 7 * time.Second}, "a") // 4+2+1+1 = 8s ≥ 7s
		s.RenewEvery = vRenew
		_, err := New(s, (&termLog{}).untilEnded)
		assertProblems(t, err, "TTL")
		for _, want := range []string{"RenewEvery + YieldGrace + ReleaseTimeout + Margin", "earliest release 7s", "8s"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("a PostgreSQL lock whose dead-client detection is shorter than the defaults need is refused", func(t *testing.T) {
		lk, err := pgkit.NewLock(pgkit.LockConfig{URL: "postgres://127.0.0.1:1/db",
			DeadClient: pgkit.DeadClient{KeepaliveIdle: 3 * time.Second, KeepaliveInterval: time.Second, KeepaliveCount: 2}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(Config{Lock: lk, Key: "job", Owner: "a"}, (&termLog{}).untilEnded) // TTL 15s: 5+2+1+1 = 9s ≥ 5s
		assertProblems(t, err, "TTL")
		if !strings.Contains(err.Error(), "earliest release 5s") {
			t.Fatalf("error %q does not name the lock's earliest release", err)
		}
		lk, _ = pgkit.NewLock(pgkit.LockConfig{URL: "postgres://127.0.0.1:1/db"})
		if _, err := New(Config{Lock: lk, Key: "job", Owner: "a"}, (&termLog{}).untilEnded); err != nil {
			t.Fatalf("the defaults on the default PostgreSQL lock: %v", err)
		}
	})
	t.Run("timings that fit are accepted", func(t *testing.T) {
		s := vSpec(boundLock{lock.NewMemory(), 9 * time.Second}, "a")
		s.RenewEvery = vRenew
		if _, err := New(s, (&termLog{}).untilEnded); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the soft deadline counts from the earliest release, not the TTL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const earliest = 9 * time.Second
			s := vSpec(boundLock{lock.NewMemory(), earliest}, "a")
			s.RenewEvery = vRenew
			deadline := make(chan time.Time, 1)
			start := time.Now()
			startReplica(t, s, func(_ context.Context, term *Term) error {
				deadline <- term.Deadline()
				<-term.Ended()
				return nil
			})
			got := (<-deadline).Sub(start)
			if want := earliest - vMargin - vYield - vRelease; got != want {
				t.Fatalf("soft deadline %v after the acquire, want %v (earliest release − Margin − YieldGrace − ReleaseTimeout)", got, want)
			}
		})
	})
}

func TestNoLockStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lk := lock.NewMemory() // announces releases
		release := make(chan struct{})
		a := startReplica(t, wSpec(lk, "a"), func(_ context.Context, term *Term) error {
			<-release
			return nil
		})
		synctest.Wait()
		if !a.held() {
			t.Fatal("a does not lead")
		}
		var (
			mu        sync.Mutex
			campaigns = map[string][]time.Time{}
			rs        []*replica
		)
		for i := range 30 {
			s := wSpec(lk, fmt.Sprintf("w%02d", i))
			s.MayCampaign = func(context.Context) (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				campaigns[s.Owner] = append(campaigns[s.Owner], time.Now())
				return true, nil
			}
			rs = append(rs, startReplica(t, s, (&termLog{}).untilEnded))
		}
		time.Sleep(time.Second) // every waiter's first campaign finds the lease held
		close(release)
		woke := time.Now()
		time.Sleep(2 * wCE)
		mu.Lock()
		defer mu.Unlock()
		var first, last time.Duration = 10 * wCE, 0
		losers := 0
		for _, r := range rs {
			if r.held() {
				continue
			}
			losers++
			// The loser's campaign after the woken one.
			next := time.Duration(-1)
			for _, at := range campaigns[r.l.conf.Owner] {
				if d := at.Sub(woke); d > wakeJitter {
					next = d
					break
				}
			}
			if next < 0 {
				t.Fatalf("%s did not campaign again within %v of the wake", r.l.conf.Owner, 2*wCE)
			}
			first, last = min(first, next), max(last, next)
		}
		if losers != len(rs)-1 {
			t.Fatalf("%d losers among %d waiters; want all but one", losers, len(rs))
		}
		// In lock-step every loser would campaign again within [0.8, 1] ×
		// CampaignEvery of the same wake.
		if spread := last - first; spread < wCE*3/10 || first >= wCE*8/10 {
			t.Fatalf("losers' next campaigns span %v..%v after the wake; want them spread across CampaignEvery (%v)", first, last, wCE)
		}
	})
}

func TestDuplicateOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lk := lock.NewMemory()
		var ga, gb termLog
		a := startReplica(t, vSpec(lk, "same"), ga.untilEnded)
		synctest.Wait()
		if !a.held() {
			t.Fatal("a does not lead")
		}
		b := startReplica(t, vSpec(lk, "same"), gb.untilEnded)
		time.Sleep(5 * vTTL)
		if n := a.ended(reasonLost) + a.ended(reasonExpired); n != 0 || !a.held() || len(ga.all()) != 1 {
			t.Fatalf("a lost its term (%v lost or expired, %d terms, leading %v): the duplicate took the lease from it", n, len(ga.all()), a.held())
		}
		if len(gb.all()) != 0 {
			t.Fatalf("the duplicate led %d terms beside a", len(gb.all()))
		}
		logs := b.logs.FilterLevelExact(zap.ErrorLevel).FilterFieldKey("duplicate_owner").All()
		if len(logs) != 1 {
			t.Fatalf("the duplicate logged %d errors naming the duplicate owner, want 1 (once per lease): %v", len(logs), logs)
		}
		if f := logs[0].ContextMap(); f["duplicate_owner"] != "same" || f["lock"] != "job" {
			t.Fatalf("log fields %v; want the owner id and the key", f)
		}
		var m dto.Metric
		if err := b.l.m.duplicates.WithLabelValues("job").Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
			t.Fatalf("servicewright_leadership_duplicate_owner_total = %v, %v; want 1", m.GetCounter().GetValue(), err)
		}
	})
	t.Run("a renewal that finds its owner id with another token names the duplicate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lk := lock.NewMemory()
			spy := &spyLock{Lock: lk}
			var ga termLog
			a := startReplica(t, vSpec(spy, "same"), ga.untilEnded)
			synctest.Wait()
			// Another process with the same owner id takes the lease behind a's
			// back (as one did before duplicates were detected: it released a's
			// lease as an acquire whose answer was lost).
			h, _ := lk.Inspect(context.Background(), "job")
			if err := lk.Release(context.Background(), lock.Lease{Key: "job", Owner: "same", Token: h.Token, TTL: vTTL}); err != nil {
				t.Fatal(err)
			}
			if _, err := lk.Acquire(context.Background(), "job", "same", vTTL); err != nil {
				t.Fatal(err)
			}
			time.Sleep(vRenew + time.Second)
			if a.held() || a.ended(reasonLost) != 1 {
				t.Fatalf("a still leads (%v) or did not end its term as lost", a.held())
			}
			logs := a.logs.FilterLevelExact(zap.ErrorLevel).FilterFieldKey("duplicate_owner").All()
			if len(logs) == 0 || !strings.Contains(fmt.Sprint(logs[0].ContextMap()["error"]), lock.ErrDuplicateOwner.Error()) {
				t.Fatalf("the holder logged no error naming the duplicate owner at its renewal: %v", logs)
			}
		})
	})
}
