package kafkaentry

import (
	"context"
	"errors"
	"fmt"
	"net"
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
		Headers: []kafka.Header{{Key: "trace", Value: []byte("abc")}, {Key: HeaderAttempts, Value: []byte("stale")}},
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
	for key, want := range map[string]string{
		"trace": "abc", HeaderTopic: "orders", HeaderPartition: "2", HeaderOffset: "41", HeaderGroup: "g",
		HeaderAttempts: "3", HeaderErrorType: "error", HeaderFailedAt: "2026-01-02T03:04:05Z",
	} {
		if len(got[key]) != 1 || got[key][0] != want {
			t.Errorf("header %s = %q, want exactly %q", key, got[key], want)
		}
	}
	if e := got[HeaderError][0]; len(e) > maxErrorHeaderBytes || !utf8.ValidString(e) || !strings.HasSuffix(e, "…") {
		t.Errorf("error header of %d bytes (valid UTF-8: %v), want at most %d, cut with an ellipsis",
			len(e), utf8.ValidString(e), maxErrorHeaderBytes)
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
