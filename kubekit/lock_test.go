package kubekit

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/lock/locktest"
)

// clientFor returns a clientset of the package's apiserver authenticated as user in
// groups by a client certificate.
func clientFor(t testing.TB, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	testenv.Require(t, apiErr)
	certPEM, keyPEM, err := api.ClientCertPEM(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(api.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	// QPS and Burst lift client-go's default rate limit (5/s), which would pace the
	// tests that take many keys.
	c, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL(), Timeout: 5 * time.Second, QPS: 500, Burst: 1000,
		TLSClientConfig: rest.TLSClientConfig{CertData: certPEM, KeyData: keyPEM, CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newLock(t testing.TB, c kubernetes.Interface, ns string) *Lock {
	t.Helper()
	lk, err := NewLock(c, LockConfig{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

func unique(t testing.TB) string {
	return strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

func TestLock(t *testing.T) {
	lk := newLock(t, clientFor(t, "admin", "system:masters"), "default")
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	locktest.Run(t, locktest.Harness{
		Lock: lk,
		Key:  func(n string) string { return n + "-" + run },
		WaitPast: func(t *testing.T, k string, d time.Duration) {
			deadline := time.Now().Add(d + 10*time.Second)
			for {
				h, err := lk.Inspect(context.Background(), k)
				if err == nil && !h.Held() {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%q still held: %+v, %v", k, h, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		},
	})

	t.Run("bad configuration is one error naming each field", func(t *testing.T) {
		_, err := NewLock(nil, LockConfig{})
		locktest.AssertProblems(t, err, "client", "Namespace")
	})
}

// TestRace has candidates on separate clients race for one free Lease, many times:
// exactly one wins each round (the others' updates are refused with 409; see
// locktest.Race).
func TestRace(t *testing.T) {
	var locks []lock.Lock
	for range 4 {
		locks = append(locks, newLock(t, clientFor(t, "admin", "system:masters"), "default"))
	}
	ctx := context.Background()
	k := unique(t)
	if _, err := locks[0].Inspect(ctx, k); err != nil { // the Lease exists before the race
		t.Fatal(err)
	}
	locktest.Race(t, locks, k, 8)
}

// TestStaleHolder lets a holder go silent past its TTL while another takes the
// Lease: the old holder's update (from the version it last wrote) is refused, and
// it learns it no longer holds the lease.
func TestStaleHolder(t *testing.T) {
	a := newLock(t, clientFor(t, "admin", "system:masters"), "default")
	b := newLock(t, clientFor(t, "admin", "system:masters"), "default")
	ctx := context.Background()
	k := unique(t)
	old, err := a.Acquire(ctx, k, "a", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, k, "b", time.Minute); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("acquire of a live lease = %v, want lock.ErrHeld", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var nl lock.Lease
	for {
		if nl, err = b.Acquire(ctx, k, "b", time.Minute); err == nil {
			break
		}
		if !errors.Is(err, lock.ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("b never took the lapsed lease: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.Renew(ctx, old); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("stale Renew = %v, want lock.ErrNotHeld", err)
	}
	if err := a.Release(ctx, old); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("stale Release = %v, want lock.ErrNotHeld", err)
	}
	if h, err := b.Inspect(ctx, k); err != nil || h.Owner != "b" || h.Token != nl.Token || nl.Token <= old.Token {
		t.Fatalf("Inspect = %+v, %v (tokens %d then %d); the stale holder disturbed its successor", h, err, old.Token, nl.Token)
	}
}

// TestMissing: a client without RBAC permission, or a namespace that does not
// exist, is an error naming what is missing, not a hang.
func TestMissing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nobody := newLock(t, clientFor(t, "nobody"), "default")
	if _, err := nobody.Inspect(ctx, "k"); err == nil || !strings.Contains(err.Error(), "may not use leases.coordination.k8s.io") {
		t.Fatalf("Inspect without RBAC = %v, want an error naming the leases permission", err)
	}
	ghost := newLock(t, clientFor(t, "admin", "system:masters"), "no-such-namespace")
	if _, err := ghost.Acquire(ctx, "k", "a", time.Second); err == nil || !strings.Contains(err.Error(), `namespace "no-such-namespace" does not exist`) {
		t.Fatalf("Acquire in a missing namespace = %v, want an error naming it", err)
	}
}
