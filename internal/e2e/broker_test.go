package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

// TestBrokerOutage runs the example against a broker of the test's, kills the
// broker, and checks that POST /orders answers 503 with a Retry-After within the
// producer's write timeout while it is gone, and 202 again once a broker is back on
// the same port.
func TestBrokerOutage(t *testing.T) {
	port := freePortT(t)
	cfg := kafkadev.EmbeddedConfig{Ports: []int{port}, Topics: map[string]int{ordersTopic: 3, deadLetters: 1}}
	broker, err := kafkadev.NewEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { broker.Close() }) // after the example's own cleanup, registered later
	httpAddr := freeAddr(t)
	p, _ := startExample(t, "HTTP_ADDR="+httpAddr, "KAFKA_BROKERS="+broker.Addr())
	mustLog(t, p, stage("serve"), 20*time.Second)
	client := &http.Client{Timeout: time.Minute}
	post := func(id string) (*http.Response, time.Duration) {
		t.Helper()
		began := time.Now()
		resp, err := client.Post("http://"+httpAddr+"/orders", "application/json",
			bytes.NewBufferString(fmt.Sprintf(`{"id":%q,"item":"tea","qty":1}`, id)))
		if err != nil {
			t.Fatalf("POST /orders %s: %v (after %v)", id, err, time.Since(began))
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, time.Since(began)
	}
	if resp, _ := post("before"); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /orders with the broker up: %d, want 202", resp.StatusCode)
	}

	broker.Close()
	// A sanity bound: the write timeout (kafkakit's default, 3s, which the example
	// keeps) ends the wait, so the 503 comes then, not when the client gives up;
	// three times that leaves room for a loaded machine.
	bound := 3 * 3 * time.Second
	for i := range 3 {
		resp, took := post(fmt.Sprintf("during-%d", i))
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("POST /orders with the broker gone: %d, want 503", resp.StatusCode)
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("Retry-After %q, want whole seconds", resp.Header.Get("Retry-After"))
		}
		if took > bound {
			t.Errorf("the 503 took %v, want within %v", took, bound)
		}
		t.Logf("broker gone: %d after %v", resp.StatusCode, took)
	}

	broker, err = kafkadev.NewEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { broker.Close() })
	back := time.Now()
	for {
		resp, _ := post("after")
		if resp.StatusCode == http.StatusAccepted {
			t.Logf("accepted again %v after the broker came back", time.Since(back))
			break
		}
		if time.Since(back) > 20*time.Second {
			t.Fatalf("POST /orders still %d 20s after the broker came back", resp.StatusCode)
		}
	}
}

func freePortT(t *testing.T) int {
	t.Helper()
	_, port, _ := strings.Cut(freeAddr(t), ":")
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
