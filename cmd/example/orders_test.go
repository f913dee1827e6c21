package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
)

func TestDecodeOrder(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		field      string // the field the error must name; "" for a valid body
	}{
		{"valid", `{"id":"o1","item":"tea","qty":2}`, ""},
		{"largest qty", `{"id":"o1","item":"tea","qty":2147483647}`, ""},
		{"qty 2^31", `{"id":"o1","item":"tea","qty":2147483648}`, "qty"},
		{"qty beyond int64", `{"id":"o1","item":"tea","qty":1e40}`, "qty"},
		{"qty fraction", `{"id":"o1","item":"tea","qty":1.5}`, "qty"},
		{"qty zero", `{"id":"o1","item":"tea","qty":0}`, "qty"},
		{"qty negative", `{"id":"o1","item":"tea","qty":-3}`, "qty"},
		{"NUL in id", `{"id":"o\u00001","item":"tea","qty":1}`, "id"},
		{"newline in id", `{"id":"o\n1","item":"tea","qty":1}`, "id"},
		{"id of 65 bytes", `{"id":"` + strings.Repeat("a", 65) + `","item":"tea","qty":1}`, "id"},
		{"id missing", `{"item":"tea","qty":1}`, "id"},
		{"NUL in item", `{"id":"o1","item":"t\u0000ea","qty":1}`, "item"},
		{"id not a string", `{"id":7,"item":"tea","qty":1}`, "id"},
		{"unknown field", `{"id":"o1","item":"tea","qty":1,"price":3}`, `"price"`},
		{"client-set deliveries", `{"id":"o1","item":"tea","qty":1,"deliveries":9}`, `"deliveries"`},
		{"trailing garbage", `{"id":"o1","item":"tea","qty":1}garbage`, "one JSON object"},
		{"two objects", `{"id":"o1","item":"tea","qty":1}{"id":"o2","item":"tea","qty":1}`, "one JSON object"},
		{"not an object", `[1,2]`, "JSON object"},
		{"empty", ``, "JSON object"},
	} {
		o, err := decodeOrder(strings.NewReader(tc.body))
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tc.name, err)
		case tc.field == "" && (o.ID != "o1" || o.Qty < 1):
			t.Errorf("%s: decoded %+v", tc.name, o)
		case tc.field != "" && err == nil:
			t.Errorf("%s: accepted %+v, want a 400 naming %s", tc.name, o, tc.field)
		case tc.field != "" && !strings.Contains(err.Error(), tc.field):
			t.Errorf("%s: error %q does not name %s", tc.name, err, tc.field)
		}
	}
}

// TestHandleOrder: the consumer's handler dead-letters what the store cannot hold at
// once, and EXAMPLE_HANDLE_DELAY holds each handling, cut short by its ctx.
func TestHandleOrder(t *testing.T) {
	s := &memStore{orders: map[string]Order{}}
	h := handleOrder(s, 0)
	for _, v := range []string{`not json`, `{"id":"o\u0000","item":"tea","qty":1}`, `{"id":"o1","item":"tea","qty":4294967296}`} {
		if err := h(context.Background(), kafka.Message{Value: []byte(v)}); !errors.Is(err, kafkaentry.ErrUndecodable) {
			t.Errorf("%s: %v, want ErrUndecodable (dead-lettered at once)", v, err)
		}
	}
	if err := h(context.Background(), kafka.Message{Value: []byte(`{"id":"o1","item":"tea","qty":1}`)}); err != nil {
		t.Fatal(err)
	}

	// In virtual time: the hour-long delay ends exactly when the ctx does, 50 ms in.
	synctest.Test(t, func(t *testing.T) {
		slow := handleOrder(s, time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		began := time.Now()
		err := slow(ctx, kafka.Message{Value: []byte(`{"id":"o2","item":"tea","qty":1}`)})
		if took := time.Since(began); !errors.Is(err, context.DeadlineExceeded) || took != 50*time.Millisecond {
			t.Errorf("a delayed handling whose ctx ended: %v after %v, want the ctx error at its 50ms deadline", err, took)
		}
	})
	if _, ok, _ := s.Get(context.Background(), "o2"); ok {
		t.Error("the handling cut short stored the order")
	}
}

func TestHandleDelayKnob(t *testing.T) {
	t.Setenv("EXAMPLE_HANDLE_DELAY", "250ms")
	k, err := readKnobs()
	if err != nil || k.handleDelay != 250*time.Millisecond {
		t.Errorf("EXAMPLE_HANDLE_DELAY=250ms: %v, %v", k.handleDelay, err)
	}
	for _, v := range []string{"-1s", "11m", "soon"} {
		t.Setenv("EXAMPLE_HANDLE_DELAY", v)
		if _, err := readKnobs(); err == nil || !strings.Contains(err.Error(), "EXAMPLE_HANDLE_DELAY") {
			t.Errorf("EXAMPLE_HANDLE_DELAY=%s: %v, want an error naming it", v, err)
		}
	}
}

func TestKafkaBrokersNotEchoed(t *testing.T) {
	t.Setenv("KAFKA_BROKERS", "localhost:9092,svc:hunter2@kafka.internal")
	_, err := readKnobs()
	if err == nil || !strings.Contains(err.Error(), "KAFKA_BROKERS") {
		t.Fatalf("a malformed KAFKA_BROKERS: %v, want an error naming it", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error %q echoes the entry's password", err)
	}
}
