package entrypoint

import (
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint/admission"
)

// A phase of offered load on the simulated server of recoverRun: Poisson arrivals
// at rate per second for d.
type loadPhase struct {
	rate float64
	d    time.Duration
}

// recoverRun offers a Gate with the default limiter the phases in turn, on a
// simulated server that serves requests at once, each in service while no more than
// cores are in flight and proportionally longer beyond (cores shared among the
// requests admitted, fixed at admission). It returns the instants, as offsets from
// the start of the last phase, at which a request of that phase was shed, and the
// first at which one found the limit back at its unloaded value, the default
// InitialLimit it started at (−1: never).
func recoverRun(t *testing.T, service time.Duration, cores int, phases ...loadPhase) (shed []time.Duration, back time.Duration) {
	back = -1
	lim, err := admission.New(admission.Config{})
	if err != nil {
		t.Fatal(err)
	}
	initial := lim.Limit()
	var g Gate
	g.SetLimiter(lim)
	type req struct {
		t    Ticket
		done time.Time
	}
	var inFlight []req // by done
	finish := func(upTo time.Time) {
		for len(inFlight) > 0 && !inFlight[0].done.After(upTo) {
			time.Sleep(time.Until(inFlight[0].done))
			inFlight[0].t.Leave()
			inFlight = inFlight[1:]
		}
	}
	rng := rand.New(rand.NewPCG(29, 4))
	at := time.Now()
	var lastFrom time.Time
	for i, p := range phases {
		if i == len(phases)-1 {
			lastFrom = at
		}
		for end := at.Add(p.d); at.Before(end); at = at.Add(time.Duration(rng.ExpFloat64() / p.rate * float64(time.Second))) {
			finish(at)
			time.Sleep(time.Until(at))
			if i == len(phases)-1 && back < 0 && lim.Limit() >= initial {
				back = at.Sub(lastFrom)
			}
			tk, v := g.Admit(Ordinary)
			if v != Admitted {
				if i == len(phases)-1 {
					shed = append(shed, at.Sub(lastFrom))
				}
				continue
			}
			took := service * time.Duration(max(cores, len(inFlight)+1)) / time.Duration(cores)
			r := req{t: tk, done: at.Add(took)}
			i, _ := slices.BinarySearchFunc(inFlight, r, func(a, b req) int { return a.done.Compare(b.done) })
			inFlight = slices.Insert(inFlight, i, r)
		}
	}
	finish(at.Add(time.Hour))
	return shed, back
}

// recoveryBound is how soon after an overload ends the limit is back at its
// unloaded value (the default InitialLimit, 20) and nothing is shed: ten windows
// of the default 100ms (the Limiter doubles a recovering limit each window: five
// windows from 1 to 20, and room for the overload's queue to clear and a probe to
// end).
const recoveryBound = 10 * 100 * time.Millisecond

// After an overload ends, the limit returns to its unloaded value within
// recoveryBound, and from then on a load well within capacity is never shed —
// however low the overload drove the limit, and however little of the limit the
// easy load uses. (Before, a CPU-bound service kept a limit of 3 for the whole
// easy minute after a burst and shed 25 requests through it, as a real one kept 2–4
// for a minute after a wrk burst.)
func TestGateRecoversAfterBurst(t *testing.T) {
	for _, c := range []struct {
		name    string
		service time.Duration
		cores   int
	}{{"cpu-bound", 2 * time.Millisecond, 1}, {"io-bound", 20 * time.Millisecond, 8}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				capacity := float64(c.cores) * float64(time.Second) / float64(c.service)
				shed, back := recoverRun(t, c.service, c.cores,
					loadPhase{rate: capacity / 4, d: 10 * time.Second}, // easy
					loadPhase{rate: capacity * 4, d: 10 * time.Second}, // a burst at 4×
					loadPhase{rate: capacity / 4, d: 60 * time.Second}, // easy again
				)
				t.Logf("limit back at its unloaded value %v after the burst; shed at %v", back, shed)
				if back < 0 || back > recoveryBound {
					t.Errorf("the limit came back to its unloaded value %v after the burst (−1: never), want within %v",
						back, recoveryBound)
				}
				for _, at := range shed {
					if at > recoveryBound {
						t.Errorf("a request of the easy load was shed %v after the burst, later than %v", at, recoveryBound)
						break
					}
				}
			})
		})
	}
}
