package leader

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/lock"
)

// fault.Permanent from lead, Claim or MayCampaign means "retrying cannot fix it":
// campaigning stops for good, as for a configuration error, instead of a new term
// after a backoff. The process stays up.
func TestPermanentStopsCampaigning(t *testing.T) {
	bad := errors.New("the digest schema is newer than this build")
	for _, c := range []struct {
		name  string
		setup func(s *Config, lead *func(context.Context, *Term) error, calls *atomic.Int32)
	}{
		{"from lead", func(_ *Config, lead *func(context.Context, *Term) error, calls *atomic.Int32) {
			*lead = func(context.Context, *Term) error { calls.Add(1); return fault.Permanent(bad) }
		}},
		{"from Claim", func(s *Config, _ *func(context.Context, *Term) error, calls *atomic.Int32) {
			s.Claim = func(context.Context, *Term) (bool, error) { calls.Add(1); return false, fault.Permanent(bad) }
		}},
		{"from MayCampaign", func(s *Config, _ *func(context.Context, *Term) error, calls *atomic.Int32) {
			s.MayCampaign = func(context.Context) (bool, error) { calls.Add(1); return false, fault.Permanent(bad) }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				spy := &spyLock{Lock: lock.NewMemory()}
				s := vSpec(spy, "a")
				s.Retry = entrypoint.Backoff{Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond}
				var calls atomic.Int32
				var g termLog
				lead := g.untilEnded
				c.setup(&s, &lead, &calls)
				r := startReplica(t, s, lead)
				time.Sleep(30 * vCE)
				if n := calls.Load(); n != 1 {
					t.Fatalf("called %d times in %v, want once: a permanent failure is not retried", n, 30*vCE)
				}
				if err := r.l.Halted(); !fault.IsPermanent(err) || !errors.Is(err, bad) {
					t.Fatalf("Halted = %v, want the permanent failure", err)
				}
				if h, _ := spy.Inspect(context.Background(), "job"); h.Owner == "a" {
					t.Fatal("the halted replica kept the lease")
				}
				select {
				case err := <-r.served:
					t.Fatalf("Serve returned %v: the process must stay up", err)
				default:
				}
			})
		})
	}
}
