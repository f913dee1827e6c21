package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Two clients in different roles, as two replicas would be, share the broker: what
// one produces the other consumes, and a signal stops the broker with exit code 0.
func TestSharedBroker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-addr", "127.0.0.1:0", "-topic", "orders=2"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("first line %q", line)
	}

	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "orders", BatchTimeout: time.Millisecond, Transport: transport}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := w.WriteMessages(wctx, kafka.Message{Key: []byte("o-1"), Value: []byte("tea")}); err != nil {
		t.Fatalf("produce: %v", err)
	}
	w.Close()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, GroupID: "g", Topic: "orders", MaxWait: 50 * time.Millisecond})
	m, err := r.ReadMessage(wctx)
	r.Close()
	if err != nil || string(m.Value) != "tea" {
		t.Fatalf("consume: %q, %v", m.Value, err)
	}

	cancel()
	if c := <-code; c != 0 {
		t.Errorf("exit code %d after the signal, want 0", c)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-addr", "0.0.0.0:9092"}, // no authentication: loopback only
		{"-addr", "127.0.0.1:99999"},
		{"-addr", "nonsense"},
		{"-topic", "orders=0"},
	} {
		var stderr bytes.Buffer
		if c := run(context.Background(), args, io.Discard, &stderr); c != 2 || stderr.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", args, c, stderr.String())
		}
	}
}
