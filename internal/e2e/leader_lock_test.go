package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/servicewright/servicewright/internal/testenv"
)

// TestLeadershipEtcd runs the digest publisher's fleet with LEADER_LOCK=etcd on a
// 3-member cluster, and the digests in PostgreSQL, fenced by the lease's tokens.
func TestLeadershipEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts several replicas and an etcd cluster")
	}
	e, err := testenv.StartEtcd(3)
	testenv.Require(t, err)
	t.Cleanup(func() { _ = e.Stop() })
	// etcd leases are whole seconds: a TTL of 2s lapses 2s after the last renewal.
	leaderFleetOn(t, leaderFleet{name: "etcd", ttl: 2 * time.Second, campaign: 500 * time.Millisecond,
		lock: []string{"LEADER_LOCK=etcd", "ETCD_ENDPOINTS=" + strings.Join(e.Endpoints(), ",")}})
}

// TestLeadershipKubernetes is TestLeadershipEtcd with LEADER_LOCK=kubernetes on a
// real kube-apiserver, through a kubeconfig with a client certificate.
func TestLeadershipKubernetes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts several replicas and a kube-apiserver")
	}
	k, err := testenv.StartKubeAPIServer()
	testenv.Require(t, err)
	t.Cleanup(func() { _ = k.Stop() })
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := k.WriteKubeconfig(path, "", "orders", "system:masters"); err != nil {
		t.Fatal(err)
	}
	leaderFleetOn(t, leaderFleet{name: "a Kubernetes Lease", ttl: 2 * time.Second, campaign: 500 * time.Millisecond,
		lock: []string{"LEADER_LOCK=kubernetes", "KUBECONFIG=" + path, "POD_NAMESPACE=default"}})
}

// leaderFleet is a digest publisher fleet's lock and the checks particular to it.
type leaderFleet struct {
	name          string   // the lock, in the subtests' names
	lock          []string // the variables that select it
	ttl, campaign time.Duration
	led           func(t *testing.T, db *pgx.Conn, tok uint64) // more checks on the first term; may be nil
	replaced      func(t *testing.T, took time.Duration)       // on the crash failover's time; may be nil
}

// leaderFleetOn runs the digest publisher's fleet with the lock the variables
// lock select and the digests in PostgreSQL, fenced by the lease's tokens: one
// leads, a graceful stop hands over on the release notice, a killed leader is
// replaced once its lease lapses, tokens increase, and a paused leader writes
// nothing after its successor's first write.
func leaderFleetOn(t *testing.T, f leaderFleet) {
	name, ttl, campaign := f.name, f.ttl, f.campaign
	top := t
	db := pgConn(t)
	backends := append(f.lock, "DATABASE_URL="+env.Postgres(t).DSN(), "EXAMPLE_LEADER_TTL="+ttl.String(), "EXAMPLE_CAMPAIGN_EVERY="+campaign.String())
	reps := startFleet(t, 3, backends...)
	var tokens []uint64

	t.Run("one of three leads, through "+name, func(t *testing.T) {
		_, tok := leaderOf(t, reps, 10*time.Second)
		tokens = append(tokens, tok)
		if f.led != nil {
			f.led(t, db, tok)
		}
	})

	t.Run("a graceful stop hands over on the release notice", func(t *testing.T) {
		old, _ := leaderOf(t, reps, 10*time.Second)
		_ = old.proc.Signal(syscall.SIGTERM)
		if code := exitCode(t, old.proc); code != 0 {
			t.Fatalf("leader exited %d", code)
		}
		gone := time.Now()
		reps = without(reps, old)
		_, tok := leaderOf(t, reps, 10*time.Second)
		tokens = append(tokens, tok)
		t.Logf("graceful failover on %s: %s after the exit (CampaignEvery %s)", name, time.Since(gone), campaign)
	})

	t.Run("a SIGKILLed leader is replaced", func(t *testing.T) {
		reps = append(reps, startFleet(top, 1, backends...)...)
		old, _ := leaderOf(t, reps, 10*time.Second)
		_ = old.proc.Signal(syscall.SIGKILL)
		_, _ = old.proc.Wait(10 * time.Second)
		killed := time.Now()
		reps = without(reps, old)
		_, tok := leaderOf(t, reps, 10*time.Second)
		took := time.Since(killed)
		tokens = append(tokens, tok)
		t.Logf("crash failover on %s: %s (CampaignEvery %s, TTL %s)", name, took, campaign, ttl)
		if f.replaced != nil {
			f.replaced(t, took)
		}
	})

	t.Run("tokens strictly increase across terms", func(t *testing.T) {
		for i := 1; i < len(tokens); i++ {
			if tokens[i] <= tokens[i-1] {
				t.Errorf("tokens %v do not increase", tokens)
			}
		}
	})

	t.Run("a leader paused past its lease or session writes nothing after its successor's first write", func(t *testing.T) {
		pausedLeaderWritesNothing(t, db, reps)
	})
}
