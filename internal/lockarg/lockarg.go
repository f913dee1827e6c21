package lockarg

import (
	"time"

	"github.com/servicewright/servicewright/fault"
)

// Acquire checks Acquire's arguments: a key, an owner and a positive ttl.
func Acquire(key, owner string, ttl time.Duration) error {
	var l fault.Problems
	acquire(&l, key, owner, ttl)
	return l.Err()
}

// Expiring checks AcquireExpiring's arguments: Acquire's, and a positive fenceTTL.
func Expiring(key, owner string, ttl, fenceTTL time.Duration) error {
	var l fault.Problems
	acquire(&l, key, owner, ttl)
	if fenceTTL <= 0 {
		l.Addf("fenceTTL", "must be positive, got %v", fenceTTL)
	}
	return l.Err()
}

// Lease checks a lease given to Renew or Release, by its fields: Acquire's
// arguments, then a token, which only Acquire hands out.
func Lease(key, owner string, ttl time.Duration, token uint64) error {
	if err := Acquire(key, owner, ttl); err != nil {
		return err
	}
	if token == 0 {
		return &fault.ConfigError{Problems: []fault.Problem{{Field: "lease.Token", Reason: "must be positive (a lease comes from Acquire)"}}}
	}
	return nil
}

// Key checks the key of AdvanceFence, Inspect and a watch: it must not be empty.
func Key(key string) error {
	if key == "" {
		return &fault.ConfigError{Problems: []fault.Problem{{Field: "key", Reason: "must not be empty"}}}
	}
	return nil
}

func acquire(l *fault.Problems, key, owner string, ttl time.Duration) {
	if key == "" {
		l.Addf("key", "must not be empty")
	}
	if owner == "" {
		l.Addf("owner", "must not be empty")
	}
	if ttl <= 0 {
		l.Addf("ttl", "must be positive, got %v", ttl)
	}
}
