package leader

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/wait"
	"github.com/servicewright/servicewright/lock"
)

// Default timings of a Config, used for fields left zero.
const (
	DefaultTTL            = 15 * time.Second
	DefaultCampaignEvery  = 2 * time.Second
	defaultYieldGrace     = 2 * time.Second
	defaultReleaseTimeout = 1 * time.Second
	defaultMargin         = 1 * time.Second
)

// Config declares one leadership: which lease, who campaigns, and how long each step of
// a term may take. A zero duration takes its default; a negative one is refused.
type Config struct {
	// Name names the entrypoint; default "leadership:" + Key.
	Name string
	// Lock is the backend every replica shares: rediskit.Lock or pgkit.Lock across
	// processes, lock.Memory within one.
	Lock lock.Lock
	// Key names the lease. It must not end in ":want".
	Key string
	// Owner identifies this replica in the lock; every replica needs its own
	// (the instance id). A lease of this Owner found outside a term is taken for
	// an acquire whose answer was lost and released, so two replicas sharing an
	// Owner would release each other's leases.
	Owner string

	// TTL is the lease's lifetime after each acquire or renewal. Keep it at least
	// ten times the backend's round trip, or terms flap. Default 15s.
	TTL time.Duration
	// CampaignEvery is how often a replica that does not hold the lease tries to
	// take it (each wait drawn from [0.8, 1] × CampaignEvery so replicas spread
	// out; after losing a campaign a release notice started, from [0,
	// CampaignEvery)). It also cuts off each campaign call, and bounds each wait
	// on a lock.Waiter. Default 2s.
	CampaignEvery time.Duration
	// Poll makes a replica that waits for the lease campaign every CampaignEvery
	// and on nothing else: it neither watches release notices nor waits on a
	// lock.Waiter. Default false: a waiting replica also campaigns on the holder's
	// release. Then, when the Lock is a lock.Notifier, it campaigns as soon as the
	// holder releases (a few milliseconds of jitter apart from the other waiters;
	// Acquire still decides), and a lost notice costs at most one CampaignEvery; a
	// lock that sends no notices is polled all the same. When the Lock is also a
	// lock.Waiter (pgkit.Lock), a replica that finds the lease held waits on the
	// lock itself, up to one CampaignEvery at a time, and takes the lease within a
	// round trip of its release or its holder's crash.
	Poll bool
	// RenewEvery is how often the holder renews. Default TTL/3.
	RenewEvery time.Duration
	// YieldGrace is how long lead has to return after Term.Ended is closed, before
	// its ctx is cancelled. Default 2s.
	YieldGrace time.Duration
	// ReleaseTimeout is how long lead has to return once cancelled, and how long
	// the release may take. Default 1s.
	ReleaseTimeout time.Duration
	// Margin is the allowance for the lock backend's clock running ahead of ours: the leader
	// treats its lease as gone Margin before the lock's earliest release (its TTL,
	// or sooner: lock.ReleaseBound). Default 1s.
	Margin time.Duration

	// Retry is the wait after a term whose body failed, before campaigning again:
	// entrypoint.Backoff, the retry schedule every package uses (Initial doubling up
	// to Max, each wait drawn from the upper half of its step, so replicas that fail
	// together do not campaign together).
	Retry entrypoint.Backoff

	// Claim, when set, runs at the start of each term before lead, with the term's
	// ctx. Returning false ends the term as "unclaimed" (the lease is released and
	// the replica campaigns again); typically it claims the token in the fenced
	// store: `UPDATE … SET fence = :token WHERE … AND fence < :token`.
	Claim func(ctx context.Context, term *Term) (bool, error)
	// FenceFloor, when set, reads the highest fence the store has accepted. A
	// replica that finds the lease free advances the lock's counter to it before
	// acquiring, so the first term after the backend lost its data draws a token
	// the store accepts. A floor that cannot be read in time is skipped. Return an
	// error wrapping lock.ErrFenceOutOfRange when there is no floor the lock can pass
	// (no row yet): campaigning then stops for good. Requires RequiresFenceAdvance.
	FenceFloor func(ctx context.Context) (uint64, error)
	// RequiresFenceAdvance makes Bind refuse a lock that cannot advance its counter.
	RequiresFenceAdvance bool

	// Handoff enables handoff on request: a replica whose Prefer returns true asks
	// for the lease by holding the lock Key+":want", and the holder yields at its
	// next renewal unless it prefers the lease itself. Prefer is then required.
	// Default false: the holder keeps the lease until its term ends for another
	// reason.
	Handoff bool
	// Prefer says whether this replica should lead rather than the current holder
	// (it is closer to the data, it runs the newest version). An asker holds the
	// want-lock; a holder that prefers itself ignores askers. Errors and overruns
	// count as "campaign without handoff".
	Prefer func(ctx context.Context) (bool, error)
	// MayCampaign, when set, gates each campaign: false or an error sits that
	// campaign out, and a replica refused never asks for a handoff.
	MayCampaign func(ctx context.Context) (bool, error)
}

// DrainTime is the longest a Leadership takes to end its term and stop, once its
// defaults are applied: YieldGrace for lead to return, ReleaseTimeout for it to
// unwind once cancelled, ReleaseTimeout for the release, ReleaseTimeout for a
// want-lock's or a late acquire's release, and one second of slack. The Host's
// DrainGrace must cover it (Drain ends the term), or the term is cut before its
// release and the next leader waits out the TTL.
func (s Config) DrainTime() time.Duration {
	s = s.resolve(new(fault.Problems))
	return s.YieldGrace + 3*s.ReleaseTimeout + time.Second
}

// resolve fills in the defaults of the fields left zero and records every problem
// in l under its field name: a negative duration, a missing Lock, Key or Owner,
// timings that do not fit in the lock's earliest release, and a field that needs
// another.
func (s Config) resolve(l *fault.Problems) Config {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"TTL", s.TTL}, {"CampaignEvery", s.CampaignEvery}, {"RenewEvery", s.RenewEvery},
		{"YieldGrace", s.YieldGrace}, {"ReleaseTimeout", s.ReleaseTimeout}, {"Margin", s.Margin},
		{"Retry.Initial", s.Retry.Initial}, {"Retry.Max", s.Retry.Max},
	} {
		if f.d < 0 {
			l.Addf(f.name, "must not be negative, got %v", f.d)
		}
	}
	given := s
	s.TTL = cmp.Or(s.TTL, DefaultTTL)
	s.CampaignEvery = cmp.Or(s.CampaignEvery, DefaultCampaignEvery)
	s.RenewEvery = cmp.Or(s.RenewEvery, s.TTL/3)
	s.YieldGrace = cmp.Or(s.YieldGrace, defaultYieldGrace)
	s.ReleaseTimeout = cmp.Or(s.ReleaseTimeout, defaultReleaseTimeout)
	s.Margin = cmp.Or(s.Margin, defaultMargin)
	s.Retry.Initial = cmp.Or(s.Retry.Initial, wait.BackoffInitial)
	s.Retry.Max = cmp.Or(s.Retry.Max, max(wait.BackoffMax, s.Retry.Initial))
	s.Name = cmp.Or(s.Name, "leadership:"+s.Key)
	checkIdentity(l, s.Lock, s.Key, s.Owner)
	if allPositive(s) { // a negative field is reported above; the sums would only repeat it
		sum := s.RenewEvery + s.YieldGrace + s.ReleaseTimeout + s.Margin
		switch er := s.earliestRelease(); {
		case sum >= s.TTL:
			l.Addf("TTL", "RenewEvery + YieldGrace + ReleaseTimeout + Margin must be less than TTL (%v + %v + %v + %v = %v, TTL %v)",
				s.RenewEvery, s.YieldGrace, s.ReleaseTimeout, s.Margin, sum, s.TTL)
		case sum >= er:
			l.Addf("TTL", "RenewEvery + YieldGrace + ReleaseTimeout + Margin must be less than the lock's earliest release, "+
				"the soonest it may give the lease to another owner after a renewal (%v + %v + %v + %v = %v, earliest release %v for TTL %v); "+
				"shorten RenewEvery, YieldGrace, ReleaseTimeout or Margin, or lengthen the backend's dead-client detection",
				s.RenewEvery, s.YieldGrace, s.ReleaseTimeout, s.Margin, sum, er, s.TTL)
		}
		if s.ReleaseTimeout > s.YieldGrace {
			l.Addf("ReleaseTimeout", "must not exceed YieldGrace (ReleaseTimeout %v, YieldGrace %v)", s.ReleaseTimeout, s.YieldGrace)
		}
	}
	if s.Retry.Max < s.Retry.Initial && given.Retry.Max > 0 {
		l.Addf("Retry.Max", "must be at least Retry.Initial (%v), got %v", s.Retry.Initial, s.Retry.Max)
	}
	if s.Handoff && s.Prefer == nil {
		l.Addf("Prefer", "must be set when Handoff is true")
	}
	if s.FenceFloor != nil && !s.RequiresFenceAdvance {
		l.Addf("FenceFloor", "needs RequiresFenceAdvance: the floor is useless unless the lock can advance its counter")
	}
	return s
}

// earliestRelease is how long after a renewal is sent the Lock may give the lease to
// another owner at the earliest (lock.ReleaseBound), TTL when it declares nothing.
func (s Config) earliestRelease() time.Duration {
	if s.Lock == nil {
		return s.TTL
	}
	return lock.EarliestRelease(s.Lock, s.TTL)
}

// life is how long after a renewal is sent its term stays live: the grace, the
// unwind and the release must all fit, Margin early, before the earliest release.
func (s Config) life() time.Duration {
	return s.earliestRelease() - s.Margin - s.YieldGrace - s.ReleaseTimeout
}

func allPositive(s Config) bool {
	return s.TTL > 0 && s.RenewEvery > 0 && s.YieldGrace > 0 && s.ReleaseTimeout > 0 && s.Margin > 0
}

// checkIdentity records in l what is wrong with the lock, key and owner a Config or
// a SingletonConfig names: a nil Lock, an empty Key or one in the handoff requests'
// namespace, an empty Owner.
func checkIdentity(l *fault.Problems, lk lock.Lock, key, owner string) {
	if lk == nil {
		l.Addf("Lock", "must not be nil")
	}
	switch {
	case key == "":
		l.Addf("Key", "must not be empty")
	case strings.HasSuffix(key, wantSuffix):
		l.Addf("Key", "must not end in %q, which names the handoff request lock, got %q", wantSuffix, key)
	}
	if owner == "" {
		l.Addf("Owner", "must not be empty")
	}
}
