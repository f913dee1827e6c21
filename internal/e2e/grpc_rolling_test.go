package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	ordersv1 "github.com/servicewright/servicewright/api/orders/v1"
	"github.com/servicewright/servicewright/internal/proctest"
	"github.com/servicewright/servicewright/internal/testenv"
)

// grpcReplica is one gRPC process behind HAProxy, restarted on the same ports.
type grpcReplica struct {
	name, bin   string
	grpc, probe string
	env         []string
	proc        *proctest.Proc
}

func (r *grpcReplica) start(t *testing.T) {
	t.Helper()
	r.proc = proctest.Start(t, r.bin, append([]string{
		"GRPC_ADDR=" + r.grpc, "PROBE_ADDR=" + r.probe, "HTTP_ADDR=127.0.0.1:0"}, r.env...)...)
	waitReady(t, r.name, r.probe, r.proc)
}

// grpcLoad calls the orders API through one client connection at rate per second
// until stop closes. NOT_FOUND is an answer; any other error is a failure.
type grpcLoad struct {
	ok, failed atomic.Int64
	took       time.Duration
	mu         sync.Mutex
	samples    []string
}

func (l *grpcLoad) run(api ordersv1.OrdersServiceClient, rate, workers int, stop <-chan struct{}) {
	began := time.Now()
	defer func() { l.took = time.Since(began) }()
	tokens := make(chan int, workers)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(tokens)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				select {
				case tokens <- n:
				default: // every worker busy: skip the tick
				}
			}
		}
	})
	for range workers {
		wg.Go(func() {
			for n := range tokens {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				id := "r" + strconv.Itoa(n)
				var err error
				if n%2 == 0 {
					_, err = api.CreateOrder(ctx, &ordersv1.CreateOrderRequest{Order: &ordersv1.Order{Id: id, Item: "tea", Qty: 1}})
				} else {
					_, err = api.GetOrder(ctx, &ordersv1.GetOrderRequest{Id: id})
				}
				cancel()
				l.record(err)
			}
		})
	}
	wg.Wait()
}

func (l *grpcLoad) record(err error) {
	if err == nil || status.Code(err) == codes.NotFound {
		l.ok.Add(1)
		return
	}
	l.failed.Add(1)
	l.mu.Lock()
	if len(l.samples) < 3 {
		msg := err.Error()
		l.samples = append(l.samples, msg[:min(len(msg), 120)])
	}
	l.mu.Unlock()
}

// grpcRollingRestart runs two replicas behind HAProxy (HTTP/2 both sides, /readyz
// checked every 250 ms, no retries) under load and restarts each of them rounds
// times in turn. A replica still running 10 s after SIGTERM is killed, as the
// kubelet would at the end of its grace period.
func grpcRollingRestart(t *testing.T, bin string, env []string, rounds int) *grpcLoad {
	t.Helper()
	var reps []*grpcReplica
	var backends []testenv.Backend
	for i := range 2 {
		r := &grpcReplica{name: fmt.Sprintf("g%d", i+1), bin: bin, grpc: freeAddr(t), probe: freeAddr(t), env: env}
		_, probePort, _ := net.SplitHostPort(r.probe)
		port, _ := strconv.Atoi(probePort)
		reps = append(reps, r)
		backends = append(backends, testenv.Backend{Name: r.name, Addr: r.grpc, ProbePort: port, Proto: "h2"})
	}
	for _, r := range reps {
		r.start(t)
	}
	lb, err := testenv.StartHAProxy(backends, 250*time.Millisecond)
	testenv.Require(t, err)
	t.Cleanup(func() { _ = lb.Stop() })
	for _, r := range reps {
		if err := lb.WaitStatus(r.name, "UP", 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := grpc.NewClient(lb.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	l := &grpcLoad{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { l.run(ordersv1.NewOrdersServiceClient(conn), 400, 64, stop) })
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for range rounds {
		for _, r := range reps {
			_ = r.proc.Signal(syscall.SIGTERM)
			if _, err := r.proc.Wait(10 * time.Second); err != nil {
				_ = r.proc.Signal(syscall.SIGKILL)
				if _, err := r.proc.Wait(5 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
			r.start(t)
			if err := lb.WaitStatus(r.name, "UP", 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	return l
}

func TestGRPCRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("the rolling restart takes ~30s")
	}
	rounds := envInt("SW_GRPC_ROLLING_ROUNDS", 2)
	t.Run("grpcentry behind HAProxy fails no RPC", func(t *testing.T) {
		// The drain is under test, not overload protection: on a machine the whole
		// test suite loads, the limiter may rightly shed a call, which this test
		// would count as dropped (TestRolloutOverload tests the two together).
		l := grpcRollingRestart(t, bin, []string{"SW_DRAIN_DELAY=1s", "SW_LOG_LEVEL=warn", "SW_ADMISSION_OFF=1"}, rounds)
		total := l.ok.Load() + l.failed.Load()
		rps := float64(total) / l.took.Seconds()
		t.Logf("grpcentry: %d RPCs in %s (%.0f/s), %d failed %v", total, l.took.Round(time.Millisecond), rps, l.failed.Load(), l.samples)
		if l.failed.Load() != 0 {
			t.Errorf("%d of %d RPCs failed: %v", l.failed.Load(), total, l.samples)
		}
		if rps < 200 {
			t.Errorf("only %.0f RPCs/s: the load was too thin to prove anything", rps)
		}
	})
	t.Run("a plain grpc-go server with GracefulStop behind the same HAProxy fails RPCs", func(t *testing.T) {
		plain, err := proctest.Build(t.TempDir(), "github.com/servicewright/servicewright/internal/cmd/grpcbaseline")
		if err != nil {
			t.Fatal(err)
		}
		l := grpcRollingRestart(t, plain, nil, rounds)
		total := l.ok.Load() + l.failed.Load()
		t.Logf("plain grpc-go: %d RPCs, %d failed %v", total, l.failed.Load(), l.samples)
		if l.failed.Load() == 0 {
			t.Errorf("0 of %d failed: the test cannot tell a graceful drain from none", total)
		}
	})
}
