package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/outbox"
)

// TestRelayBindVerifies: a missing table and a table of the wrong shape are each a
// *fault.ConfigError at Bind naming the table (and the columns at fault);
// CreateTable creates it.
func TestRelayBindVerifies(t *testing.T) {
	pool := freshDB(t)
	_, producer := broker(t, map[string]int{"t": 1})
	box, err := outbox.New("OUTBOX_TABLE", "events")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	r, err := outbox.NewRelay(box, pool, producer, outbox.RelayConfig{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Bind(ctx)
	if ce, ok := errors.AsType[*fault.ConfigError](err); !ok || !strings.Contains(err.Error(), `"events" does not exist`) {
		t.Fatalf("bind without the table: %v (a ConfigError: %v)", err, ce != nil)
	}

	if _, err := pool.Exec(ctx, `CREATE TABLE events (seq int PRIMARY KEY, topic text, value text)`); err != nil {
		t.Fatal(err)
	}
	r, _ = outbox.NewRelay(box, pool, producer, outbox.RelayConfig{})
	err = r.Bind(ctx)
	if _, ok := errors.AsType[*fault.ConfigError](err); !ok {
		t.Fatalf("bind on a wrong shape: %v, want a ConfigError", err)
	}
	for _, want := range []string{"column seq of type integer, want bigint", "no column id (uuid)", "no column key", "column value of type text, want bytea", "no column created_at"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("bind on a wrong shape: %v\nlacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "topic") {
		t.Errorf("bind on a wrong shape blames topic, which is right: %v", err)
	}

	if _, err := pool.Exec(ctx, `DROP TABLE events`); err != nil {
		t.Fatal(err)
	}
	r, _ = outbox.NewRelay(box, pool, producer, outbox.RelayConfig{CreateTable: true})
	start(t, r)
}

// TestNewRelayConfig: every bad field is named at once.
func TestNewRelayConfig(t *testing.T) {
	box, _ := outbox.New("T", "")
	_, err := outbox.NewRelay(box, nil, nil, outbox.RelayConfig{Every: -1, Batch: 1000})
	for _, want := range []string{"Every", "Batch", "pool", "producer"} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("%v lacks %s", err, want)
		}
	}
	if _, err := outbox.New("OUTBOX_TABLE", "a;drop"); err == nil || !strings.Contains(err.Error(), "OUTBOX_TABLE") {
		t.Errorf("New with a bad name: %v", err)
	}
}

// TestRelayWokenByNotify: with a tick of an hour, events written after the relay
// started are published all the same, within the test's sanity bound: the NOTIFY of
// the commit woke the relay. On a tick alone they would wait the hour.
func TestRelayWokenByNotify(t *testing.T) {
	pool := freshDB(t)
	b, producer := broker(t, map[string]int{"orders": 1})
	box, _ := outbox.New("T", "")
	reg := prometheus.NewRegistry()
	r, err := outbox.NewRelay(box, pool, producer, outbox.RelayConfig{Every: time.Hour, CreateTable: true}, outbox.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	// The relay's first pass, and the listener's first look, may run before or after
	// these writes: either way nothing but a notice or that first look can publish them.
	for i := range 3 {
		write(t, pool, box, outbox.Event{Topic: "orders", Key: "k", Value: []byte(strconv.Itoa(i))})
		msgs := readN(t, b, "orders", i+1)
		if got := string(msgs[i].Value); got != strconv.Itoa(i) {
			t.Fatalf("message %d: %q", i, got)
		}
		if outbox.EventID(msgs[i]) == "" {
			t.Fatalf("message %d has no outbox-event-id header", i)
		}
	}
	if n := pending(t, pool, box); n != 0 {
		t.Errorf("%d events left in the table after publication", n)
	}
	if got := value(t, reg, "servicewright_outbox_published_total"); got != 3 {
		t.Errorf("published_total = %v, want 3", got)
	}
}

// TestRelayReplicasOrderPerKey: three relays on one table publish 600 events of 6
// keys, written by concurrent transactions; each event arrives once (no fault here),
// and each key's events arrive in the order they were written.
func TestRelayReplicasOrderPerKey(t *testing.T) {
	pool := freshDB(t)
	b, producer := broker(t, map[string]int{"orders": 1})
	box, _ := outbox.New("T", "")
	if err := box.Create(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r, err := outbox.NewRelay(box, pool, producer, outbox.RelayConfig{Batch: 7, Every: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		start(t, r)
	}
	const keys, perKey = 6, 100
	errs := make(chan error, keys)
	for k := range keys {
		go func() {
			ctx := context.Background()
			for i := range perKey {
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					return box.Write(ctx, tx, outbox.Event{Topic: "orders", Key: fmt.Sprint("k", k), Value: []byte(strconv.Itoa(i))})
				})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range keys {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	msgs := readN(t, b, "orders", keys*perKey)
	next := map[string]int{}
	ids := map[string]bool{}
	for _, m := range msgs {
		k := string(m.Key)
		v, _ := strconv.Atoi(string(m.Value))
		if v != next[k] {
			t.Fatalf("key %s: got event %d, want %d (out of order or repeated)", k, v, next[k])
		}
		next[k]++
		id := outbox.EventID(m)
		if ids[id] {
			t.Fatalf("event id %s published twice", id)
		}
		ids[id] = true
	}
}

// TestRelayBrokerDown: events written while the broker is gone stay pending and
// are counted as failed; once it is back they are all published.
func TestRelayBrokerDown(t *testing.T) {
	pool := freshDB(t)
	b, _ := broker(t, map[string]int{"orders": 1})
	addr := b.Addr()
	b.Close()
	producer := producerFor(t, addr)
	box, _ := outbox.New("T", "")
	reg := prometheus.NewRegistry()
	failedPass := make(chan struct{})
	r, err := outbox.NewRelay(box, pool, producer, outbox.RelayConfig{CreateTable: true, Every: 50 * time.Millisecond},
		outbox.WithTelemetry(entrypoint.Telemetry{Registerer: reg, Logger: onLog("outbox relay pass failed; its events stay pending", func() { close(failedPass) })}))
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	write(t, pool, box, outbox.Event{Topic: "orders", Key: "a", Value: []byte("0")}, outbox.Event{Topic: "orders", Value: []byte("1")})
	select {
	case <-failedPass:
	case <-time.After(waitFor):
		t.Fatal("no failed pass logged with the broker gone")
	}
	if got := value(t, reg, "servicewright_outbox_failed_total"); got < 2 {
		t.Errorf("failed_total = %v after a failed pass of 2 events", got)
	}
	// The gauges are read after every failed pass.
	if got := value(t, reg, "servicewright_outbox_pending"); got != 2 {
		t.Errorf("pending = %v with 2 events unpublished", got)
	}
	if got := value(t, reg, "servicewright_outbox_oldest_age_seconds"); got <= 0 {
		t.Errorf("oldest_age_seconds = %v with events pending", got)
	}
	if n := pending(t, pool, box); n != 2 {
		t.Fatalf("%d events pending with the broker gone, want 2", n)
	}
	b2 := restart(t, addr)
	msgs := readN(t, b2, "orders", 2)
	if string(msgs[0].Value) == string(msgs[1].Value) {
		t.Fatalf("got %q twice", msgs[0].Value)
	}
}

// TestRelayDrainHandsOver: a relay drained in the middle of a backlog of 1,000 events
// returns from Drain once its pass is committed; a second relay publishes the rest.
// Each event is published once in all (nothing fails here), and none is left.
func TestRelayDrainHandsOver(t *testing.T) {
	pool := freshDB(t)
	b, producer := broker(t, map[string]int{"orders": 1})
	box, _ := outbox.New("T", "")
	if err := box.Create(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	events := make([]outbox.Event, n)
	for i := range events {
		events[i] = outbox.Event{Topic: "orders", Key: fmt.Sprint("k", i%10), Value: []byte(strconv.Itoa(i))}
	}
	write(t, pool, box, events...)
	reg := prometheus.NewRegistry()
	first, err := outbox.NewRelay(box, pool, producer, outbox.RelayConfig{Name: "first"}, outbox.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	if err != nil {
		t.Fatal(err)
	}
	run := start(t, first)
	readN(t, b, "orders", 1) // it is publishing
	run.shut(t)              // Drain returns nil: the pass in flight was committed
	handed := pending(t, pool, box)
	t.Logf("the first relay published %v events before its drain; %d left", value(t, reg, "servicewright_outbox_published_total"), handed)
	if got := value(t, reg, "servicewright_outbox_published_total"); int(got)+handed != n {
		t.Fatalf("published %v + pending %d != %d: the drain lost or kept claimed events", got, handed, n)
	}
	second, _ := outbox.NewRelay(box, pool, producer, outbox.RelayConfig{Name: "second"})
	start(t, second)
	ids := map[string]bool{}
	for _, m := range readN(t, b, "orders", n) {
		ids[outbox.EventID(m)] = true
	}
	if len(ids) != n {
		t.Fatalf("%d distinct events of %d", len(ids), n)
	}
}
