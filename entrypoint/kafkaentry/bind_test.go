package kafkaentry_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/kafkakit"
)

func noop(context.Context, kafka.Message) error { return nil }

func TestNew(t *testing.T) {
	t.Run("lists every problem with its field", func(t *testing.T) {
		_, err := kafkaentry.New(kafkaentry.Config{
			Brokers:      []string{"localhost", "host:notaport", ":9092"},
			Topics:       []string{"ok", "bad topic", "ok"},
			MaxWait:      -time.Second,
			CloseTimeout: -1,
			Workers:      -2,
			Retry:        kafkaentry.Retry{Attempts: -1, Initial: time.Second, Max: time.Millisecond},
			OnFailure:    kafkaentry.DeadLetter(""),
		}, nil)
		var ce *fault.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("New = %v, want a *fault.ConfigError", err)
		}
		var fields []string
		for _, p := range ce.Problems {
			fields = append(fields, p.Field)
		}
		want := []string{
			"Brokers[0]", "Brokers[1]", "Brokers[2]", "GroupID", "Topics[1]", "Topics[2]", "Workers",
			"Retry.Attempts", "MaxWait", "CloseTimeout", "Retry.Max", "OnFailure", "handler",
		}
		if !slices.Equal(fields, want) {
			t.Errorf("problems on %v, want %v\n%v", fields, want, err)
		}
	})

	t.Run("an Outage's problems are named under Outage", func(t *testing.T) {
		_, err := kafkaentry.New(kafkaentry.Config{
			Brokers: []string{"127.0.0.1:9092"}, GroupID: "g", Topics: []string{"t"},
			Outage: kafkaentry.Outage{DistinctFailures: -2, CheckTimeout: -1, Initial: time.Second, Max: time.Millisecond},
		}, noop)
		want := "invalid configuration (3 problems): " +
			"Outage.DistinctFailures: must be positive, or -1 to turn the rule off, got -2; " +
			"Outage.CheckTimeout: must not be negative, got -1ns; " +
			"Outage.Max: must be at least Outage.Initial (1s), got 1ms"
		if err == nil || err.Error() != want {
			t.Errorf("New = %v, want\n%s", err, want)
		}
	})

	t.Run("no brokers, no topics", func(t *testing.T) {
		_, err := kafkaentry.New(kafkaentry.Config{GroupID: "g"}, noop)
		if err == nil || !strings.Contains(err.Error(), "Brokers: must list at least one broker") ||
			!strings.Contains(err.Error(), "Topics: must list at least one topic") {
			t.Errorf("New = %v", err)
		}
	})

	t.Run("a dead-letter topic that is also consumed", func(t *testing.T) {
		_, err := kafkaentry.New(kafkaentry.Config{
			Brokers: []string{"127.0.0.1:9092"}, GroupID: "g", Topics: []string{"orders"},
			OnFailure: kafkaentry.DeadLetter("orders"),
		}, noop)
		if err == nil || !strings.Contains(err.Error(), "OnFailure") {
			t.Errorf("New = %v, want an OnFailure problem", err)
		}
	})

	t.Run("defaults", func(t *testing.T) {
		c, err := kafkaentry.New(kafkaentry.Config{Brokers: []string{"127.0.0.1:9092"}, GroupID: "g", Topics: []string{"t"}}, noop)
		if err != nil {
			t.Fatal(err)
		}
		cfg := c.Config()
		if c.Name() != "kafka" || cfg.Workers != 1 || cfg.Retry.Attempts != 3 || cfg.OnFailure.String() != "StopEntrypoint" ||
			cfg.CloseTimeout != 5*time.Second || cfg.CommitBatch != 100 {
			t.Errorf("defaults not applied: %+v", cfg)
		}
	})
}

func TestBind(t *testing.T) {
	t.Run("a missing topic is named", func(t *testing.T) {
		cfg := config(t, "no-such-topic")
		c, err := kafkaentry.New(cfg, noop)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Bind(context.Background())
		if !errors.Is(err, kafkaentry.ErrUnknownTopic) || !strings.Contains(err.Error(), `"no-such-topic"`) {
			t.Fatalf("Bind = %v, want ErrUnknownTopic naming the topic", err)
		}
	})

	t.Run("a missing dead-letter topic is named", func(t *testing.T) {
		cfg := config(t, newTopic(t, 1))
		cfg.OnFailure = kafkaentry.DeadLetter("no-such-dlq")
		c, err := kafkaentry.New(cfg, noop)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Bind(context.Background()); !errors.Is(err, kafkaentry.ErrUnknownTopic) || !strings.Contains(err.Error(), `"no-such-dlq"`) {
			t.Fatalf("Bind = %v, want ErrUnknownTopic naming the dead-letter topic", err)
		}
	})

	t.Run("AutoCreateTopics creates the missing topics", func(t *testing.T) {
		topic := "auto-" + newGroup(t)
		cfg := config(t, topic)
		cfg.AutoCreateTopics = true
		cfg.OnFailure = kafkaentry.DeadLetter(topic + ".dlq")
		col := newCollector()
		c, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c)
		produce(t, topic, "hello")
		col.waitCount(t, 1)
		r.mustShutdown(t)
		produce(t, topic+".dlq", "the dead-letter topic exists too")
	})

	t.Run("unreachable brokers", func(t *testing.T) {
		cfg := config(t, "whatever")
		cfg.Brokers = []string{closedPort(t), closedPort(t)}
		cfg.DialTimeout = time.Second
		c, err := kafkaentry.New(cfg, noop)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Bind(context.Background())
		if !errors.Is(err, kafkakit.ErrBrokersUnreachable) || !strings.Contains(err.Error(), cfg.Brokers[1]) {
			t.Fatalf("Bind = %v, want ErrBrokersUnreachable listing each broker", err)
		}
		if err := c.Health(context.Background()); !errors.Is(err, kafkakit.ErrBrokersUnreachable) {
			t.Errorf("Health = %v, want ErrBrokersUnreachable", err)
		}
		// The Host never drains or stops an entrypoint whose Bind failed, but doing
		// so is harmless.
		if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
			t.Error(err)
		}
	})

	t.Run("one reachable broker is enough", func(t *testing.T) {
		cfg := config(t, newTopic(t, 1))
		cfg.Brokers = append([]string{closedPort(t)}, broker.Brokers()...)
		c, err := kafkaentry.New(cfg, noop)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Health(context.Background()); err != nil {
			t.Errorf("Health = %v", err)
		}
		start(t, c).mustShutdown(t)
	})
}

func TestLifecycle(t *testing.T) {
	t.Run("misuse is refused and repeats do nothing", func(t *testing.T) {
		c, err := kafkaentry.New(config(t, newTopic(t, 1)), noop)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Serve(context.Background(), make(chan struct{})); !errors.Is(err, entrypoint.ErrOutOfTurn) {
			t.Errorf("Serve before Bind = %v, want entrypoint.ErrOutOfTurn", err)
		}
		r := start(t, c)
		if err := c.Bind(context.Background()); !errors.Is(err, entrypoint.ErrOutOfTurn) {
			t.Errorf("a second Bind = %v, want entrypoint.ErrOutOfTurn", err)
		}
		r.mustShutdown(t)
		if err := errors.Join(c.Drain(context.Background()), c.Stop(context.Background())); err != nil {
			t.Errorf("a second Drain and Stop: %v", err)
		}
		if err := c.Serve(context.Background(), make(chan struct{})); err != nil {
			t.Errorf("Serve after Stop = %v, want nil (nothing to serve)", err)
		}
	})

	t.Run("Stop after Bind without Serve hands the partitions on", func(t *testing.T) {
		topic := newTopic(t, 1)
		produce(t, topic, "m")
		cfg := config(t, topic)
		c, err := kafkaentry.New(cfg, noop)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Bind(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Startup aborted after Bind: the Host stops what was bound.
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The next member of the group gets the partition and the message.
		col := newCollector()
		c2, err := kafkaentry.New(cfg, col.handle)
		if err != nil {
			t.Fatal(err)
		}
		r := start(t, c2)
		col.waitCount(t, 1)
		r.mustShutdown(t)
	})
}

func TestMetrics(t *testing.T) {
	topic, dlq := newTopic(t, 1), newTopic(t, 1)
	produceToPartition(t, topic, 0, "a", "bad", "b")
	reg := prometheus.NewPedanticRegistry()
	col := newCollector()
	col.fn = func(m kafka.Message) error {
		if string(m.Value) == "bad" {
			return kafkaentry.ErrUndecodable
		}
		return nil
	}
	cfg := config(t, topic)
	cfg.Name = "orders"
	cfg.OnFailure = kafkaentry.DeadLetter(dlq)
	c, err := kafkaentry.New(cfg, col.handle, kafkaentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	if err != nil {
		t.Fatal(err)
	}
	// The paused gauge is there before anything pauses, one series per cause at 0, so
	// that an alert on it tells "not paused" from "no consumer".
	wantPaused := map[string]float64{"transient": 0, "dependency_check": 0, "distinct_failures": 0}
	if got := pausedByCause(t, reg, topic); !maps.Equal(got, wantPaused) {
		t.Errorf("servicewright_kafka_paused after New = %v, want %v", got, wantPaused)
	}
	r := start(t, c)
	col.waitCount(t, 2)
	r.mustShutdown(t)
	if got := pausedByCause(t, reg, topic); !maps.Equal(got, wantPaused) {
		t.Errorf("servicewright_kafka_paused after the stop = %v, want %v", got, wantPaused)
	}

	for name, want := range map[string]float64{
		"servicewright_kafka_messages_handled_total":       2,
		"servicewright_kafka_messages_failed_total":        1,
		"servicewright_kafka_messages_dead_lettered_total": 1,
		"servicewright_kafka_committed_offset":             3,
		"servicewright_kafka_in_flight":                    0,
	} {
		if got := gathered(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := gathered(t, reg, "servicewright_kafka_messages_consumed_total"); got < 3 {
		t.Errorf("consumed %v, want at least 3", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, mf := range mfs {
		series += len(mf.GetMetric())
	}
	if series != 9 {
		t.Errorf("%d series, want 9", series)
	}

	// A second consumer with another name shares the registry.
	if _, err := kafkaentry.New(config(t, topic), noop, kafkaentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
		t.Errorf("a second consumer: %v", err)
	}
	// The same name twice is refused.
	cfg2 := config(t, topic)
	cfg2.Name = "orders"
	_, err = kafkaentry.New(cfg2, noop, kafkaentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	if ce, ok := errors.AsType[*fault.ConfigError](err); !ok || !strings.Contains(ce.Error(), "WithTelemetry: ") {
		t.Errorf("a second consumer named orders: New = %v, want a *fault.ConfigError naming WithTelemetry", err)
	}
}

// pausedByCause returns the servicewright_kafka_paused series of topic by their cause
// label, failing on a series with another label than entrypoint, topic and cause.
func pausedByCause(t *testing.T, reg *prometheus.Registry, topic string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "servicewright_kafka_paused" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if len(labels) != 3 || labels["entrypoint"] == "" || labels["cause"] == "" {
				t.Errorf("servicewright_kafka_paused series with labels %v, want entrypoint, topic and cause", labels)
			}
			if labels["topic"] == topic {
				out[labels["cause"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// gathered returns the value of the one series of metric name.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("%s has %d series, want 1", name, len(mf.GetMetric()))
		}
		m := mf.GetMetric()[0]
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestKcat produces with librdkafka's kcat, an independent client, and consumes
// with the Consumer.
func TestKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat not found (apt-get install -y kcat); CI must not skip")
		}
		t.Skip("kcat not found (apt-get install -y kcat)")
	}
	const n = 1000
	topic := newTopic(t, 3)
	want := values("kcat", n)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-P", "-b", broker.Brokers()[0], "-t", topic, "-K", ":")
	var in bytes.Buffer
	for _, v := range want {
		in.WriteString(v + ":" + v + "\n")
	}
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}

	col := newCollector()
	c, err := kafkaentry.New(config(t, topic), col.handle)
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, c)
	col.waitCount(t, n)
	r.mustShutdown(t)
	got := col.handled()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("consumed %d messages, want the %d kcat produced", len(got), n)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
