package main

import (
	"os"
	"time"

	"github.com/servicewright/servicewright/internal/cfgerr"
)

// knobs are the example's environment: listen addresses and the test knobs that make
// its lifecycle observable (documented in the README as test knobs).
type knobs struct {
	backends
	brokers []string // KAFKA_BROKERS; empty: an embedded broker

	warmupDelay time.Duration // EXAMPLE_WARMUP_DELAY: warmup takes this long (honours cancellation)
	failAfter   time.Duration // EXAMPLE_FAIL_AFTER: an essential entrypoint fails after this long
	hookDelay   time.Duration // EXAMPLE_HOOK_DELAY: the pre_shutdown hook blocks this long
}

func readKnobs() (knobs, error) {
	var k knobs
	var l cfgerr.List
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
	k.backends = readBackends(&l)
	k.brokers = readBrokers(os.Getenv("KAFKA_BROKERS"), &l)
	return k, l.Err()
}
