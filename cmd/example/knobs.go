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
	brokers []string // KAFKA_BROKERS; empty: an embedded broker

	warmupDelay time.Duration // EXAMPLE_WARMUP_DELAY: warmup takes this long (honours cancellation)
	failAfter   time.Duration // EXAMPLE_FAIL_AFTER: an essential entrypoint fails after this long
	hookDelay   time.Duration // EXAMPLE_HOOK_DELAY: the pre_shutdown hook blocks this long
	handleDelay time.Duration // EXAMPLE_HANDLE_DELAY: each handling of an order takes this long (honours cancellation)

	cronEvery     time.Duration // EXAMPLE_CRON_EVERY: the report job's interval (default 10s)
	publishEvery  time.Duration // EXAMPLE_PUBLISH_EVERY: the leader's digest interval (default 1s)
	leaderTTL     time.Duration // EXAMPLE_LEADER_TTL: the digest lease's TTL (default 15s)
	campaignEvery time.Duration // EXAMPLE_CAMPAIGN_EVERY: how often non-leaders campaign (default 2s)
}

// maxHandleDelay bounds EXAMPLE_HANDLE_DELAY: longer than any drain it exists to test.
const maxHandleDelay = 10 * time.Minute

// defaultKnobs are the knobs with no environment.
func defaultKnobs() knobs {
	return knobs{cronEvery: 10 * time.Second, publishEvery: time.Second,
		leaderTTL: leader.DefaultTTL, campaignEvery: leader.DefaultCampaignEvery}
}

func readKnobs() (knobs, error) {
	k := defaultKnobs()
	var l fault.Problems
	dur := func(name string, dst *time.Duration) {
		v := os.Getenv(name)
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			l.Addf(name, "not a duration: %q", v)
		case d < 0:
			l.Addf(name, "must not be negative, got %s", d)
		default:
			*dst = d
		}
	}
	dur("EXAMPLE_WARMUP_DELAY", &k.warmupDelay)
	dur("EXAMPLE_FAIL_AFTER", &k.failAfter)
	dur("EXAMPLE_HOOK_DELAY", &k.hookDelay)
	dur("EXAMPLE_HANDLE_DELAY", &k.handleDelay)
	if k.handleDelay > maxHandleDelay {
		l.Addf("EXAMPLE_HANDLE_DELAY", "must be at most %s, got %s", maxHandleDelay, k.handleDelay)
	}
	dur("EXAMPLE_CRON_EVERY", &k.cronEvery)
	dur("EXAMPLE_PUBLISH_EVERY", &k.publishEvery)
	dur("EXAMPLE_LEADER_TTL", &k.leaderTTL)
	dur("EXAMPLE_CAMPAIGN_EVERY", &k.campaignEvery)
	k.backends = readBackends(&l)
	k.brokers = readBrokers(os.Getenv("KAFKA_BROKERS"), &l)
	return k, l.Err()
}
