package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// TestDrainWithMessageInHand: with EXAMPLE_HANDLE_DELAY, SIGTERM reaches the consumer
// while it holds an order; the drain lets the handling finish within the grace,
// commits it, and the process exits 0.
func TestDrainWithMessageInHand(t *testing.T) {
	httpAddr := freeAddr(t)
	p, probe := startExample(t, "HTTP_ADDR="+httpAddr, "EXAMPLE_HANDLE_DELAY=2s", "SW_DRAIN_DELAY=100ms")
	mustLog(t, p, map[string]string{"msg": "partitions assigned"}, 20*time.Second)
	resp, err := http.Post("http://"+httpAddr+"/orders", "application/json", bytes.NewBufferString(`{"id":"o1","item":"tea","qty":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /orders: %d, want 202", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for consumerInFlight(t, probe) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the consumer never held the order")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = p.Signal(syscall.SIGTERM)
	if code := exitCode(t, p); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	d := p.Find(map[string]string{"msg": "drained", "entrypoint": "orders-consumer"})
	if d == nil || fmt.Sprint(d["in_flight_at_start"]) != "1" || fmt.Sprint(d["finished"]) != "1" || fmt.Sprint(d["committed"]) == "0" {
		t.Errorf("drain log %v, want the order in hand finished and committed", d)
	}
}

func consumerInFlight(t *testing.T, probe string) int {
	t.Helper()
	resp, err := http.Get("http://" + probe + "/debug/lifecycle")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct {
		Entrypoints []struct {
			Name     string
			InFlight int `json:"in_flight"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Entrypoints {
		if e.Name == "orders-consumer" {
			return e.InFlight
		}
	}
	return -1
}
