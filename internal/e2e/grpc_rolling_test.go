package e2e

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	ordersv1 "github.com/servicewright/servicewright/cmd/example/api/orders/v1"
	"github.com/servicewright/servicewright/internal/proctest"
)

// grpcLoad calls the orders API through one client connection at rate per second
// until stop closes. NOT_FOUND is an answer; any other error is a failure.
type grpcLoad struct{ tally }

func (l *grpcLoad) run(api ordersv1.OrdersServiceClient, rate, workers int, stop <-chan struct{}) {
	l.openLoop(rate, workers, stop, func(n int) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		id := "r" + strconv.Itoa(n)
		var err error
		if n%2 == 0 {
			_, err = api.CreateOrder(ctx, &ordersv1.CreateOrderRequest{Order: &ordersv1.Order{Id: id, Item: "tea", Qty: 1}})
		} else {
			_, err = api.GetOrder(ctx, &ordersv1.GetOrderRequest{Id: id})
		}
		if err == nil || status.Code(err) == codes.NotFound {
			l.ok.Add(1)
			return
		}
		l.fail(err.Error())
	})
}

// grpcRollingRestart runs two replicas behind HAProxy (HTTP/2 both sides, /readyz
// checked every 250 ms, no retries) under load and restarts each of them rounds
// times in turn (roll).
func grpcRollingRestart(t *testing.T, bin string, env []string, rounds int) *grpcLoad {
	t.Helper()
	reps, lb := startFleetBehind(t, 2, bin, env, fleetOptions{grpc: true})
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
	roll(t, reps, lb, rounds, nil)
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
		l := grpcRollingRestart(t, bin, []string{drainDelay, "SW_LOG_LEVEL=warn", "SW_ADMISSION_OFF=1"}, rounds)
		total := l.ok.Load() + l.failed.Load()
		rps := float64(total) / l.took.Seconds()
		t.Logf("grpcentry: %d RPCs in %s (%.0f/s), %d failed %v", total, l.took.Round(time.Millisecond), rps, l.failed.Load(), l.samples)
		if l.failed.Load() != 0 {
			t.Errorf("%d of %d RPCs failed: %v", l.failed.Load(), total, l.samples)
		}
		// A sanity bound on the load, as a count rather than a rate (a loaded machine
		// slows the generator): at least 100 RPCs a restart.
		if restarts := int64(2 * rounds); total < 100*restarts {
			t.Errorf("only %d RPCs over %d restarts (%.0f/s): the load was too thin to prove anything", total, restarts, rps)
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
