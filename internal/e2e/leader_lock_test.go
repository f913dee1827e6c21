package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
	leaderFleetOn(t, "etcd", "LEADER_LOCK=etcd", "ETCD_ENDPOINTS="+strings.Join(e.Endpoints(), ","))
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
	leaderFleetOn(t, "a Kubernetes Lease", "LEADER_LOCK=kubernetes", "KUBECONFIG="+path, "POD_NAMESPACE=default")
}

// leaderFleetOn runs the digest publisher's fleet with the lock the variables
// lock select and the digests in PostgreSQL, fenced by the lease's tokens: one
// leads, a graceful stop hands over on the release notice, a killed leader is
// replaced once its lease lapses, tokens increase, and a paused leader writes
// nothing after its successor's first write.
func leaderFleetOn(t *testing.T, name string, lock ...string) {
	const ttl, campaign = 2 * time.Second, 500 * time.Millisecond
	top := t
	db := pgConn(t)
	backends := append(lock, "DATABASE_URL="+env.Postgres(t).DSN(), "EXAMPLE_LEADER_TTL="+ttl.String(), "EXAMPLE_CAMPAIGN_EVERY="+campaign.String())
	reps := startFleet(t, 3, backends...)
	var tokens []uint64

	t.Run("one of three leads, through "+name, func(t *testing.T) {
		_, tok := leaderOf(t, reps, 10*time.Second)
		tokens = append(tokens, tok)
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

	t.Run("a SIGKILLed leader is replaced once its lease lapses", func(t *testing.T) {
		reps = append(reps, startFleet(top, 1, backends...)...)
		old, _ := leaderOf(t, reps, 10*time.Second)
		_ = old.proc.Signal(syscall.SIGKILL)
		_, _ = old.proc.Wait(10 * time.Second)
		killed := time.Now()
		reps = without(reps, old)
		_, tok := leaderOf(t, reps, 10*time.Second)
		tokens = append(tokens, tok)
		t.Logf("crash failover on %s: %s (TTL %s)", name, time.Since(killed), ttl)
	})

	t.Run("tokens strictly increase across terms", func(t *testing.T) {
		for i := 1; i < len(tokens); i++ {
			if tokens[i] <= tokens[i-1] {
				t.Errorf("tokens %v do not increase", tokens)
			}
		}
	})

	t.Run("a leader paused past its lease writes nothing after its successor's first write", func(t *testing.T) {
		paused, oldTok := leaderOf(t, reps, 10*time.Second)
		_ = paused.proc.Signal(syscall.SIGSTOP)
		_, newTok := leaderOf(t, without(reps, paused), 10*time.Second)
		if newTok <= oldTok {
			t.Fatalf("new token %d not above %d", newTok, oldTok)
		}
		newFirst := firstWrite(t, db, newTok)
		_ = paused.proc.Signal(syscall.SIGCONT)
		for deadline := time.Now().Add(5 * time.Second); ; {
			if v, ok := paused.lease(t); ok && !v.Held {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the woken leader still claims the lease")
			}
		}
		var late int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM digest_log WHERE instance = $1 AND written_at > $2`,
			paused.id, newFirst).Scan(&late); err != nil {
			t.Fatal(err)
		}
		if late != 0 {
			t.Errorf("%d writes of the paused leader were accepted after the new leader's first", late)
		}
	})
}
