package kafkakit

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/segmentio/kafka-go"
)

// A write to a broker that accepts and never answers returns ErrWriteTimeout at
// WriteTimeout, to the instant, and Close is bounded by it too. The broker is a
// net.Pipe nobody reads, dialled by the Writer's own Transport, in a synctest bubble:
// the time the test reads is the Producer's, not the machine's load.
func TestProducerTimeoutError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var silent []net.Conn // the broker's ends: open, never read
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range silent {
				c.Close()
			}
		}()
		const timeout = 200 * time.Millisecond
		p, err := NewProducer(ProducerConfig{Brokers: []string{"127.0.0.1:9"}, Topic: "t", WriteTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		p.w.Transport.(*kafka.Transport).Dial = func(context.Context, string, string) (net.Conn, error) {
			client, broker := net.Pipe()
			mu.Lock()
			silent = append(silent, broker)
			mu.Unlock()
			return client, nil
		}
		began := time.Now()
		err = p.WriteMessages(context.Background(), kafka.Message{Value: []byte("x")})
		if !errors.Is(err, ErrWriteTimeout) {
			t.Errorf("write to a silent broker: %v, want ErrWriteTimeout", err)
		}
		if took := time.Since(began); took != timeout {
			t.Errorf("write took %v of virtual time, want WriteTimeout (%v)", took, timeout)
		}
		mu.Lock()
		dialled := len(silent)
		mu.Unlock()
		if dialled == 0 {
			t.Fatal("the write never dialled the silent broker")
		}
		began = time.Now()
		_ = p.Close()
		if took := time.Since(began); took > timeout {
			t.Errorf("Close took %v of virtual time, want at most WriteTimeout (%v)", took, timeout)
		}
	})
}
