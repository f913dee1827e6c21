package kafkaentry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"
	"github.com/servicewright/servicewright/fault"
)

func TestDeadLetterMessage(t *testing.T) {
	msg := &kafka.Message{
		Topic: "orders", Partition: 2, Offset: 41, Key: []byte("k"), Value: []byte("v"),
		Headers: []kafka.Header{{Key: "trace", Value: []byte("abc")}, {Key: "x-attempts", Value: []byte("stale")}},
	}
	long := strings.Repeat("é", maxErrorHeaderBytes) // two bytes each
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dm := deadLetterMessage("orders.dlq", "g", msg, errors.New(long), 3, at)

	if dm.Topic != "orders.dlq" || string(dm.Key) != "k" || string(dm.Value) != "v" {
		t.Errorf("dead letter %+v, want the original key and value on orders.dlq", dm)
	}
	got := map[string][]string{}
	for _, h := range dm.Headers {
		got[h.Key] = append(got[h.Key], string(h.Value))
	}
	// The names are what a reader in another language relies on: DeadLetterInfo's doc.
	for key, want := range map[string]string{
		"trace": "abc", "x-original-topic": "orders", "x-original-partition": "2", "x-original-offset": "41",
		"x-consumer-group": "g", "x-attempts": "3", "x-error-type": "error", "x-failed-at": "2026-01-02T03:04:05Z",
	} {
		if len(got[key]) != 1 || got[key][0] != want {
			t.Errorf("header %s = %q, want exactly %q", key, got[key], want)
		}
	}
	if e := got["x-error"][0]; len(e) > maxErrorHeaderBytes || !utf8.ValidString(e) || !strings.HasSuffix(e, "…") {
		t.Errorf("error header of %d bytes (valid UTF-8: %v), want at most %d, cut with an ellipsis",
			len(e), utf8.ValidString(e), maxErrorHeaderBytes)
	}
}

func TestParseDeadLetter(t *testing.T) {
	msg := &kafka.Message{Topic: "orders", Partition: 2, Offset: 41, Key: []byte("k"), Value: []byte("v"),
		Headers: []kafka.Header{{Key: "trace", Value: []byte("abc")}}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	dm := deadLetterMessage("orders.dlq", "g", msg, fmt.Errorf("store: %w", fault.Permanent(errors.New("no such order"))), 1, at)

	got, ok := ParseDeadLetter(dm)
	want := DeadLetterInfo{Topic: "orders", Partition: 2, Offset: 41, Group: "g", Attempts: 1,
		ErrorType: "permanent", Error: "store: permanent: no such order", FailedAt: at}
	if !ok || got != want {
		t.Errorf("ParseDeadLetter = %+v, %v; want %+v, true", got, ok, want)
	}

	if got, ok := ParseDeadLetter(*msg); ok || got != (DeadLetterInfo{}) {
		t.Errorf("ParseDeadLetter of a message never dead-lettered = %+v, %v; want zero, false", got, ok)
	}
	for i, h := range dm.Headers {
		if h.Key == "trace" {
			continue
		}
		missing := slices.Delete(slices.Clone(dm.Headers), i, i+1)
		if _, ok := ParseDeadLetter(kafka.Message{Headers: missing}); ok {
			t.Errorf("ParseDeadLetter without %s reports ok", h.Key)
		}
	}
	for _, key := range []string{"x-original-partition", "x-original-offset", "x-attempts", "x-failed-at"} {
		bad := slices.Clone(dm.Headers)
		for i := range bad {
			if bad[i].Key == key {
				bad[i].Value = []byte("not-a-number")
			}
		}
		if _, ok := ParseDeadLetter(kafka.Message{Headers: bad}); ok {
			t.Errorf("ParseDeadLetter with a malformed %s reports ok", key)
		}
	}
}

func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("x"), "error"},
		{fmt.Errorf("decode: %w", ErrUndecodable), "undecodable"},
		{&fault.PanicError{Value: "boom"}, "panic"},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), "timeout"},
		{context.Canceled, "canceled"},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, "*net.OpError"},
	} {
		if got := errorType(tc.err); got != tc.want {
			t.Errorf("errorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
