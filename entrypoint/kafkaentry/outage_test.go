package kafkaentry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
)

// dependency is what the handler of an outage run writes to: a store that can be
// taken down and brought back.
type dependency interface {
	// store records value once more; poison is a value the store refuses for good.
	store(ctx context.Context, value string) error
	down(t *testing.T)
	up(t *testing.T)
	// deliveries returns how many times each value was stored.
	deliveries(t *testing.T) map[string]int
}

// fakeStore is a dependency in memory whose outage returns a refused connection,
// as a database client does.
type fakeStore struct {
	mu     sync.Mutex
	isDown bool
	byVal  map[string]int
}

func (f *fakeStore) store(_ context.Context, v string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.isDown {
		return fmt.Errorf("store: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	if v == poisonValue {
		return errors.New("store: value out of range")
	}
	f.byVal[v]++
	return nil
}

func (f *fakeStore) down(*testing.T) { f.mu.Lock(); f.isDown = true; f.mu.Unlock() }
func (f *fakeStore) up(*testing.T)   { f.mu.Lock(); f.isDown = false; f.mu.Unlock() }
func (f *fakeStore) deliveries(*testing.T) map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.byVal))
	for k, v := range f.byVal {
		out[k] = v
	}
	return out
}

const poisonValue = "poison"

func TestOutageFake(t *testing.T) {
	res := outageRun(t, &fakeStore{byVal: map[string]int{}}, 2*time.Second)
	// A sanity bound, 10× the expected ~1s (Outage.Max), for a loaded machine: the
	// exact figure is TestOutageResumesWithinMax's, in virtual time.
	if res.resumeAfter > 10*time.Second {
		t.Errorf("consumption resumed %v after the dependency came back, want within about 1s", res.resumeAfter)
	}
}

type outageResult struct {
	resumeAfter time.Duration // from up() to no partition paused
}

// outageRun runs two consumers of one group on a 4-partition topic while dep goes
// down for hold mid-stream, with a poison message produced during the outage. It
// checks that no good message is dead-lettered, none lost, each stored exactly once;
// that the poison message reaches the dead-letter topic; that the pause shows in
// Paused, Health, StatusDetail and the paused metric while it lasts; and that no
// partition was revoked during the outage (the members kept their assignment).
func outageRun(t *testing.T, dep dependency, hold time.Duration) outageResult {
	const partitions, before, during = 4, 100, 100
	topic, dlq, group := newTopic(t, partitions), newTopic(t, 1), newGroup(t)
	var revoked atomic.Int32
	var stored atomic.Int32
	handler := func(ctx context.Context, msg kafka.Message) error {
		if err := dep.store(ctx, string(msg.Value)); err != nil {
			return err
		}
		stored.Add(1)
		return nil
	}
	type member struct {
		c   *kafkaentry.Consumer
		r   *running
		reg *prometheus.Registry
	}
	var members []member
	for i := range 2 {
		cfg := config(t, topic)
		cfg.Name = fmt.Sprintf("orders-%d", i)
		cfg.GroupID = group
		cfg.Workers = 2
		cfg.HeartbeatInterval = 200 * time.Millisecond
		cfg.Retry = kafkaentry.Retry{Attempts: 3, Initial: 20 * time.Millisecond, Max: 40 * time.Millisecond}
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		reg := prometheus.NewPedanticRegistry()
		c, err := kafkaentry.New(cfg, handler, kafkaentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg, Logger: countLog("partitions revoked", &revoked)}))
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, member{c: c, r: start(t, c), reg: reg})
	}
	defer func() {
		for _, m := range members {
			m.r.mustShutdown(t)
		}
	}()

	// Both members own partitions before the stream starts.
	waitUntil(t, func() bool { return members[0].c.Assigned() > 0 && members[1].c.Assigned() > 0 }, "both members are assigned partitions")
	good := values("order", before+during)
	produce(t, topic, good[:before]...)
	waitUntil(t, func() bool { return stored.Load() >= before/2 }, "the stream flows")

	dep.down(t)
	revokedBefore := revoked.Load()
	produce(t, topic, good[before:before+during/2]...)
	produce(t, topic, poisonValue)
	produce(t, topic, good[before+during/2:]...)
	waitUntil(t, func() bool { return len(members[0].c.Paused())+len(members[1].c.Paused()) > 0 }, "a partition is paused")
	// The pause is visible while it lasts.
	for _, m := range members {
		ps := m.c.Paused()
		if len(ps) == 0 {
			continue
		}
		err := m.c.Health(context.Background())
		if !errors.Is(err, kafkaentry.ErrPaused) {
			t.Errorf("%s: Health during the outage = %v, want ErrPaused", m.c.Name(), err)
		}
		if d := m.c.StatusDetail(); !strings.HasPrefix(d, "paused: ") || !strings.Contains(d, ps[0].Cause) {
			t.Errorf("%s: StatusDetail %q, want paused with the cause %q", m.c.Name(), d, ps[0].Cause)
		}
		if got := pausedSeries(t, m.reg); got == 0 {
			t.Errorf("%s: servicewright_kafka_paused has no series at 1 during the outage", m.c.Name())
		}
		if ps[0].Cause != "transient" {
			t.Errorf("%s: paused by %q, want %q", m.c.Name(), ps[0].Cause, "transient")
		}
		t.Logf("%s during the outage: %s", m.c.Name(), m.c.StatusDetail())
	}
	time.Sleep(hold) // the outage itself: the dependency stays down this long
	if n := members[0].c.Stats().DeadLettered + members[1].c.Stats().DeadLettered; n != 0 {
		t.Errorf("%d message(s) dead-lettered during the outage, want none", n)
	}

	upAt := time.Now()
	dep.up(t)
	waitUntil(t, func() bool { return len(members[0].c.Paused())+len(members[1].c.Paused()) == 0 }, "no partition is paused")
	res := outageResult{resumeAfter: time.Since(upAt)}
	t.Logf("resumed %v after the dependency came back", res.resumeAfter)
	if n := revoked.Load() - revokedBefore; n != 0 {
		t.Errorf("%d revocation(s) during the outage, want none (the members keep their assignment)", n)
	}
	waitUntil(t, func() bool { return len(dep.deliveries(t)) >= len(good) }, "every good message is stored")
	dead := readAll(t, dlq, 1)
	if string(dead[0].Value) != poisonValue {
		t.Errorf("dead-lettered %q, want the poison message", dead[0].Value)
	}
	for _, m := range members {
		if got := pausedSeries(t, m.reg); got != 0 {
			t.Errorf("%s: servicewright_kafka_paused still has %v series at 1 after recovery", m.c.Name(), got)
		}
	}
	for _, m := range members {
		m.r.mustShutdown(t)
	}
	members = nil

	got := dep.deliveries(t)
	lost, twice := 0, 0
	for _, v := range good {
		switch got[v] {
		case 0:
			lost++
		case 1:
		default:
			twice++
		}
	}
	if lost != 0 || twice != 0 {
		t.Errorf("%d good messages lost and %d stored more than once, want none", lost, twice)
	}
	if _, ok := got[poisonValue]; ok {
		t.Error("the poison message was stored")
	}
	if n := countDLQ(t, dlq); n != 1 {
		t.Errorf("%d messages on the dead-letter topic, want 1 (the poison one)", n)
	}
	return res
}

// pausedSeries counts the servicewright_kafka_paused series at 1.
func pausedSeries(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "servicewright_kafka_paused" {
			for _, m := range mf.GetMetric() {
				n += m.GetGauge().GetValue()
			}
		}
	}
	return n
}

// countDLQ counts the messages of the one-partition topic.
func countDLQ(t *testing.T, topic string) int64 {
	return endOffsets(t, topic, 1)[0]
}

// countLog returns a logger that counts the entries with message msg.
func countLog(msg string, n *atomic.Int32) *zap.Logger {
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zap.DebugLevel)
	return zap.New(zapcore.RegisterHooks(core, func(e zapcore.Entry) error {
		if e.Message == msg {
			n.Add(1)
		}
		return nil
	}))
}
