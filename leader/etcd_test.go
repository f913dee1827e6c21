package leader

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/etcdkit"
	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/lock"
)

// openEtcdLock returns an etcdkit.Lock on a client of endpoints, and how to close
// the client.
func openEtcdLock(endpoints []string) (*etcdkit.Lock, func(), error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, err
	}
	lk, err := etcdkit.NewLock(c, etcdkit.LockConfig{})
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return lk, func() { _ = c.Close() }, nil
}

// newEtcdLock returns an etcdkit.Lock on its own client of e, closed when t ends.
func newEtcdLock(t testing.TB, e *testenv.Etcd) *etcdkit.Lock {
	t.Helper()
	lk, closeClient, err := openEtcdLock(e.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeClient)
	return lk
}

// startEtcd starts a 3-member etcd cluster for t, stopped when t ends.
func startEtcd(t *testing.T) *testenv.Etcd {
	t.Helper()
	e, err := testenv.StartEtcd(3)
	testenv.Require(t, err)
	t.Cleanup(func() { _ = e.Stop() })
	return e
}

// etcdBackend is a 3-member etcd cluster as a backend of the leadership suite:
// killing it kills two members, the raft leader among them, so that the survivor
// has no quorum; restarting it restarts them, on their data.
func etcdBackend(t *testing.T) backend {
	e := startEtcd(t)
	var (
		mu     sync.Mutex
		killed []int
	)
	return backend{
		name: "etcd",
		lock: func(t *testing.T) lock.Lock { return newEtcdLock(t, e) },
		kill: func() error {
			mu.Lock()
			defer mu.Unlock()
			first := max(e.Leader(), 0)
			killed = []int{first, (first + 1) % e.Members()}
			for _, i := range killed {
				if err := e.Kill(i); err != nil {
					return err
				}
			}
			return nil
		},
		restart: func() error {
			mu.Lock()
			defer mu.Unlock()
			for _, i := range killed {
				if err := e.Restart(i); err != nil {
					return err
				}
			}
			killed = nil
			return nil
		},
		lapse: 2 * time.Second, // rTTL rounded up to whole seconds
	}
}

// TestEtcdRaftLeaderKilled kills the etcd member that is the raft leader under a
// leading replica while another campaigns: the two survivors keep a quorum, so
// leadership continues, or passes on within a lease's bound; never two terms at
// once.
func TestEtcdRaftLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	e := startEtcd(t)
	for run := range 2 {
		key := keyFor(t, strings.Repeat("x", run))
		var ga, gb termLog
		a := startReplica(t, rSpec(newEtcdLock(t, e), key, "a"), ga.untilEnded)
		waitFor(t, 5*time.Second, "a leads", a.held)
		b := startReplica(t, rSpec(newEtcdLock(t, e), key, "b"), gb.untilEnded)
		leader := e.Leader()
		if leader < 0 {
			t.Fatal("no raft leader")
		}
		if err := e.Kill(leader); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		// Several lease lifetimes: a term that ends must end by its deadline,
		// and someone must lead again within TTL (whole seconds) + CampaignEvery.
		time.Sleep(3 * time.Second)
		rs := []*replica{a, b}
		// A sanity bound, 10× the expected TTL (2s, whole seconds) + CampaignEvery + a
		// raft election (1s), for a loaded machine: the cadence is exact in virtual
		// time (TestCampaignCadence), this run checks that terms never overlap.
		waitFor(t, 10*(2*time.Second+rCE+time.Second), "a leader after the raft leader died", func() bool { return len(holders(rs)) == 1 })
		var all []termRec
		all = append(all, ga.all()...)
		all = append(all, gb.all()...)
		slices.SortFunc(all, func(x, y termRec) int { return x.begin.Compare(y.begin) })
		for i := 1; i < len(all); i++ {
			if all[i-1].end.IsZero() || !all[i-1].end.Before(all[i].begin) {
				t.Fatalf("run %d: terms overlap: %+v then %+v", run, all[i-1], all[i])
			}
		}
		t.Logf("run %d: raft leader (member %d) killed; %d term(s) since, a held %v, b held %v, %v after the kill",
			run, leader, len(all)-1, a.held(), b.held(), time.Since(killed).Round(time.Millisecond))
		a.shutdown()
		b.shutdown()
		if err := e.Restart(leader); err != nil {
			t.Fatal(err)
		}
	}
}
