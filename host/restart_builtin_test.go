package host_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

// A NonEssential Kafka consumer whose handler's store was down fails under
// StopEntrypoint; the Host restarts it after its backoff, logged and counted, and it
// consumes again from the failed message — over a real (embedded) broker.
func TestNonEssentialConsumerIsRestarted(t *testing.T) {
	b, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close) // after the Harness's cleanup, which stops the service
	const topic = "orders"
	if err := b.CreateTopic(topic, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := kafka.DialLeader(ctx, "tcp", b.Addr(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.WriteMessages(kafka.Message{Value: []byte("ok-0")}, kafka.Message{Value: []byte("bad")},
		kafka.Message{Value: []byte("ok-1")})
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		handled []string
		down    atomic.Bool // the store the handler writes to; down for "bad"'s first delivery
		all     = make(chan struct{})
	)
	down.Store(true)
	c, err := kafkaentry.New(kafkaentry.Config{Brokers: b.Brokers(), GroupID: "orders", Topics: []string{topic},
		MaxWait: 100 * time.Millisecond, Retry: kafkaentry.Retry{Attempts: 1}},
		func(_ context.Context, m kafka.Message) error {
			if string(m.Value) == "bad" && down.Swap(false) {
				return errors.New("store unreachable")
			}
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, string(m.Value))
			if len(handled) == 3 {
				close(all)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	reg := prometheus.NewRegistry()
	x := hosttest.New(t, host.AppSpec{ServiceName: "orders",
		Entrypoints: []host.Registration{
			{Entrypoint: newFake("api", &journal{})},
			{Entrypoint: c, NonEssential: true},
		},
		Telemetry: host.TelemetryConfig{Logger: zap.New(core), Registry: reg},
	})
	x.Start()
	select {
	case <-all:
	case <-time.After(20 * time.Second): // a sanity bound, never a pause
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("handled %v; want ok-0, bad and ok-1 after the restart", handled)
	}
	if got := counterSum(t, reg, "servicewright_entrypoint_restarts_total"); got != 1 {
		t.Errorf("servicewright_entrypoint_restarts_total = %v, want 1", got)
	}
	if n := logs.FilterMessage("restarting non-essential entrypoint").Len(); n != 1 {
		t.Errorf("%d restarts logged, want 1", n)
	}
	if st := lifecycleState(x.Host(), "kafka"); st != "serving" {
		t.Errorf("the consumer is %q after its restart, want serving", st)
	}
	x.Stop()
	if err := x.Wait(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"ok-0", "bad", "ok-1"}; len(handled) != 3 || handled[0] != want[0] || handled[1] != want[1] || handled[2] != want[2] {
		t.Errorf("handled %v, want %v: each once, the failed one after the restart", handled, want)
	}
	if st := c.Stats(); st.Uncommitted != 0 || st.Failed != 1 {
		t.Errorf("consumer stats %+v, want the one failure and nothing uncommitted", st)
	}
}

// A NonEssential Loop that failed with fault.Permanent is not restarted: no retry can
// fix it. The failure is logged once, nothing is counted as a restart, and the
// others keep serving.
func TestPermanentFailureIsNotRestarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		l, err := entrypoint.NewLoop(entrypoint.LoopConfig{Name: "sweeper", Every: time.Second},
			func(context.Context) error { runs.Add(1); return fault.Permanent(errors.New("the table is gone")) })
		if err != nil {
			t.Fatal(err)
		}
		core, logs := observer.New(zap.InfoLevel)
		reg := prometheus.NewRegistry()
		x := hosttest.New(t, host.AppSpec{ServiceName: "orders",
			Entrypoints: []host.Registration{
				{Entrypoint: newFake("api", &journal{})},
				{Entrypoint: l, NonEssential: true},
			},
			Telemetry: host.TelemetryConfig{Logger: zap.New(core), Registry: reg},
		})
		x.Start()
		x.WaitStage(host.StageServe)
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Errorf("the unit ran %d times in an hour, want 1", n)
		}
		if got := counterSum(t, reg, "servicewright_entrypoint_restarts_total"); got != 0 {
			t.Errorf("servicewright_entrypoint_restarts_total = %v, want 0", got)
		}
		if n := logs.FilterMessageSnippet("failed permanently and is not restarted").Len(); n != 1 {
			t.Errorf("%d lines saying it is not restarted, want 1", n)
		}
		if st := lifecycleState(x.Host(), "sweeper"); st != "failed" {
			t.Errorf("sweeper is %q, want failed", st)
		}
		x.Stop()
		if err := x.Wait(); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
}
