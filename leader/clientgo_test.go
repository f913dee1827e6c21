package leader

import (
	"context"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// countingTransport counts the requests a client sends.
type countingTransport struct {
	rt    http.RoundTripper
	calls *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return c.rt.RoundTrip(r)
}

// elector is one client-go LeaderElector at its defaults (LeaseDuration 15s,
// RenewDeadline 10s, RetryPeriod 2s) on the Lease name, counting its requests.
type elector struct {
	calls   atomic.Int64
	started chan time.Time // when it began leading
	cancel  context.CancelFunc
	done    chan struct{}
}

func startElector(t *testing.T, kubeconfig, name, id string, releaseOnCancel bool) *elector {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	e := &elector{started: make(chan time.Time, 1), done: make(chan struct{})}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &e.calls} }
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	lk := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Client: c.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
	go func() {
		defer close(e.done)
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{Lock: lk,
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			ReleaseOnCancel: releaseOnCancel,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { e.started <- time.Now() },
				OnStoppedLeading: func() {},
			}})
	}()
	t.Cleanup(e.stop)
	return e
}

func (e *elector) stop() { e.cancel(); <-e.done }

// TestClientGoFigures measures client-go's own leader election at its defaults on
// the same kind of apiserver as the Lease lock's figures, for make bench: the
// graceful hand-over (ReleaseOnCancel), the crash failover (the leader stops
// renewing without a release), and the requests a second of a campaigner while
// another leads. It prints clientgo_figure lines.
func TestClientGoFigures(t *testing.T) {
	if os.Getenv("SW_BENCH") != "1" {
		t.Skip("set SW_BENCH=1 to measure client-go's leader election (run with -v to see it)")
	}
	k := startKube(t)
	path := writeKubeconfig(t, k, "")
	for _, kind := range []string{"graceful", "crash"} {
		name := "clientgo-" + kind
		a := startElector(t, path, name, "a", kind == "graceful")
		select {
		case <-a.started:
		case <-time.After(30 * time.Second):
			t.Fatal("a did not lead within 30s")
		}
		b := startElector(t, path, name, "b", true)
		time.Sleep(2 * time.Second) // b's first campaigns
		before := b.calls.Load()
		const window = 10 * time.Second
		time.Sleep(window)
		perSec := float64(b.calls.Load()-before) / window.Seconds()
		stopped := time.Now()
		a.stop() // graceful: releases; crash: stops renewing, releases nothing
		select {
		case began := <-b.started:
			took := began.Sub(stopped)
			t.Logf("clientgo_figure kind=%s ms=%.1f calls_per_s=%.3f", kind, millis(took), perSec)
		case <-time.After(40 * time.Second):
			t.Fatalf("%s: b did not lead within 40s", kind)
		}
		b.stop()
	}
}
