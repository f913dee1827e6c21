package main

import (
	"os"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/leader"
)

// knobs are the example's environment: listen addresses and the test knobs that make
// its lifecycle observable (documented in the README as test knobs).
type knobs struct {
	backends
	addrs
	testKnobs          // the end-to-end tests' knobs: empty unless built with -tags e2e (knobs_e2e.go)
	brokers   []string // KAFKA_BROKERS; empty: an embedded broker
	outbox    bool     // ORDERS_OUTBOX: POST /orders through the transactional outbox (outbox.go)

	warmupDelay time.Duration // EXAMPLE_WARMUP_DELAY: warmup takes this long (honours cancellation)
	hookDelay   time.Duration // EXAMPLE_HOOK_DELAY: the pre_shutdown hook blocks this long
	handleDelay time.Duration // EXAMPLE_HANDLE_DELAY: each handling of an order takes this long (honours cancellation)
	buildDelay  time.Duration // EXAMPLE_BUILD_DELAY: a container constructor takes this long (it has no ctx to honour)

	cronEvery     time.Duration // EXAMPLE_CRON_EVERY: the report job's interval (default 10s)
	publishEvery  time.Duration // EXAMPLE_PUBLISH_EVERY: the leader's digest interval (default 1s)
	leaderTTL     time.Duration // EXAMPLE_LEADER_TTL: the digest lease's TTL (default 15s)
	campaignEvery time.Duration // EXAMPLE_CAMPAIGN_EVERY: how often non-leaders campaign (default 2s)
}

// defaultKnobs are the knobs with no environment.
func defaultKnobs() knobs {
	return knobs{addrs: addrs{httpAddr: ":8080", grpcAddr: ":9090", probeAddr: ":8079"}, cronEvery: 10 * time.Second, publishEvery: time.Second,
		leaderTTL: leader.DefaultTTL, campaignEvery: leader.DefaultCampaignEvery}
}

// readKnobs reads the example's environment. Every problem comes back at once in one
// *fault.ConfigError naming each variable; no value is echoed from a backend variable.
func readKnobs() (knobs, error) {
	k := defaultKnobs()
	var l fault.Problems
	readDurations(&l, []durationKnob{
		{"EXAMPLE_WARMUP_DELAY", &k.warmupDelay, 0, 10 * time.Minute, false},
		{"EXAMPLE_HOOK_DELAY", &k.hookDelay, 0, 10 * time.Minute, false},
		{"EXAMPLE_HANDLE_DELAY", &k.handleDelay, 0, 10 * time.Minute, false},
		{"EXAMPLE_BUILD_DELAY", &k.buildDelay, 0, 10 * time.Minute, false},
		{"EXAMPLE_CRON_EVERY", &k.cronEvery, time.Second, 24 * time.Hour, false},
		{"EXAMPLE_PUBLISH_EVERY", &k.publishEvery, 10 * time.Millisecond, time.Hour, false},
		{"EXAMPLE_LEADER_TTL", &k.leaderTTL, time.Second, time.Hour, false},
		{"EXAMPLE_CAMPAIGN_EVERY", &k.campaignEvery, 10 * time.Millisecond, time.Hour, false},
	})
	k.testKnobs = readTestKnobs(&l)
	k.backends = readBackends(&l)
	k.addrs = readAddrs(&l)
	k.brokers = readBrokers(os.Getenv("KAFKA_BROKERS"), &l)
	k.outbox = readOutbox(k.backends, &l)
	return k, l.Err()
}

// durationKnob is a duration variable and its range: a value outside it is a
// ConfigError naming the variable, never a busy loop (EXAMPLE_PUBLISH_EVERY=0) or a
// wait longer than any test or drain the knob exists for.
type durationKnob struct {
	name     string
	dst      *time.Duration
	min, max time.Duration
	off      bool // 0 is accepted too, and turns the knob off
}

// readDurations sets each knob whose variable is set, recording every problem in l.
func readDurations(l *fault.Problems, knobs []durationKnob) {
	for _, b := range knobs {
		v := os.Getenv(b.name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			l.Addf(b.name, "not a duration: %q", v)
		case b.off && d == 0:
			*b.dst = 0
		case d < b.min || d > b.max:
			off := ""
			if b.off {
				off = "0 (off) or "
			}
			l.Addf(b.name, "must be %sfrom %s to %s, got %s", off, b.min, b.max, d)
		default:
			*b.dst = d
		}
	}
}
