package entrypoint

import (
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint/admission"
)

// Routes of different cost do not shed each other: cheap reads (2ms, from a cache)
// beside writes to a database that serves four at a time (20ms each, longer
// beyond four in flight), the writes offered at twice what the database serves.
// With a route class for the writes (Gate.AdmitTo with the limiter's NewClass), the
// writes' latency moves their own limit and not one read is shed; with one limit
// for both (Admit), the writes' latency drags it down and the reads are shed with
// them.
func TestGateRouteClassesDoNotShedEachOther(t *testing.T) {
	for _, classed := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			readsShed, writesShed := classRun(t, classed, 30*time.Second)
			t.Logf("route class %v: %d reads and %d writes shed in the second half", classed, readsShed, writesShed)
			switch {
			case writesShed == 0:
				t.Errorf("route class %v: no write shed at twice the database's capacity; the model is not overloaded", classed)
			case classed && readsShed > 0:
				t.Errorf("with a route class for the writes, %d reads were shed: the writes' latency dragged the reads' limit", readsShed)
			case !classed && readsShed == 0:
				t.Errorf("with one limit for reads and writes, no read was shed: the model does not show the drag")
			}
		})
	}
}

// classRun offers reads at 400/s and writes at 400/s (Poisson) for d and counts
// those of each shed over the second half.
func classRun(t *testing.T, classed bool, d time.Duration) (readsShed, writesShed int) {
	lim, err := admission.New(admission.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var g Gate
	g.SetLimiter(lim)
	writeLim := lim
	if classed {
		writeLim = lim.NewClass()
	}
	type req struct {
		t     Ticket
		done  time.Time
		write bool
	}
	var inFlight []req // by done
	writes := 0
	finish := func(upTo time.Time) {
		for len(inFlight) > 0 && !inFlight[0].done.After(upTo) {
			time.Sleep(time.Until(inFlight[0].done))
			inFlight[0].t.Leave()
			if inFlight[0].write {
				writes--
			}
			inFlight = inFlight[1:]
		}
	}
	rng := rand.New(rand.NewPCG(29, 4))
	start := time.Now()
	nextRead, nextWrite := start, start
	gap := func(rate float64) time.Duration { return time.Duration(rng.ExpFloat64() / rate * float64(time.Second)) }
	for {
		write := nextWrite.Before(nextRead)
		at := nextRead
		if write {
			at = nextWrite
			nextWrite = nextWrite.Add(gap(400))
		} else {
			nextRead = nextRead.Add(gap(400))
		}
		if at.After(start.Add(d)) {
			break
		}
		finish(at)
		time.Sleep(time.Until(at))
		var tk Ticket
		var v Verdict
		took := 2 * time.Millisecond
		if write {
			tk, v = g.AdmitTo(writeLim, Ordinary)
			took = 20 * time.Millisecond * time.Duration(max(4, writes+1)) / 4
		} else {
			tk, v = g.Admit(Ordinary)
		}
		if v != Admitted {
			if at.Sub(start) >= d/2 {
				if write {
					writesShed++
				} else {
					readsShed++
				}
			}
			continue
		}
		if write {
			writes++
		}
		r := req{t: tk, done: at.Add(took), write: write}
		i, _ := slices.BinarySearchFunc(inFlight, r, func(a, b req) int { return a.done.Compare(b.done) })
		inFlight = slices.Insert(inFlight, i, r)
	}
	finish(start.Add(d + time.Hour))
	return readsShed, writesShed
}
