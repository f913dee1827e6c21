package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/internal/proctest"
)

// TestOutboxRelay runs two replicas with ORDERS_OUTBOX=true against a broker in a
// process of its own (cmd/devbroker) and the package's PostgreSQL, while a client
// POSTs orders without pause: the broker is frozen (SIGSTOP) until a relay's
// write has timed out, and thawed, each replica is replaced by a new one (SIGTERM), and
// PostgreSQL is restarted. Every order answered 202 is committed; every committed
// order's event reaches the consumer and is stored exactly once (deliveries = 1):
// none lost, none applied twice, although the relays publish some events more
// than once (counted from the topic's offsets) and the inbox absorbs them.
//
// Without the outbox (POST /orders producing to Kafka), a frozen broker answers
// the POSTs 503 after committing nothing, or, for a write given up on that kafka-go
// completes later, delivers what the client was told failed.
func TestOutboxRelay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and several replicas, restarts PostgreSQL")
	}
	pg := env.Postgres(t)
	brokerAddr := freeAddr(t)
	broker := startDevBroker(t, brokerAddr)
	db := freshDatabase(t, pg.DSN(), "outbox_relay")
	replicaEnv := []string{"KAFKA_BROKERS=" + brokerAddr, "DATABASE_URL=" + db.dsn, "ORDERS_OUTBOX=true", "SW_DRAIN_DELAY=200ms"}

	type replica struct {
		p    *proctest.Proc
		addr string
	}
	start := func() replica {
		addr := freeAddr(t)
		p, _ := startExample(t, append(replicaEnv, "HTTP_ADDR="+addr)...)
		mustLog(t, p, stage("serve"), 30*time.Second)
		return replica{p, addr}
	}
	replicas := []replica{start(), start()}

	// The client: POSTs orders one after the other to the replicas in turn; acked
	// are those answered 202.
	var (
		mu      sync.Mutex
		live    = []string{replicas[0].addr, replicas[1].addr}
		acked   []string
		refused int
		posted  int
	)
	progress := make(chan struct{}, 1)
	quit := make(chan struct{})
	posting := make(chan struct{})
	go func() {
		defer close(posting)
		client := &http.Client{Timeout: 10 * time.Second}
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			mu.Lock()
			addr := live[i%len(live)]
			mu.Unlock()
			id := fmt.Sprintf("ob-%06d", i)
			resp, err := client.Post("http://"+addr+"/orders", "application/json",
				bytes.NewBufferString(fmt.Sprintf(`{"id":%q,"item":"tea","qty":1}`, id)))
			ok := err == nil && resp.StatusCode == http.StatusAccepted
			if err == nil {
				resp.Body.Close()
			}
			mu.Lock()
			posted++
			if ok {
				acked = append(acked, id)
			} else {
				refused++
			}
			mu.Unlock()
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	}()
	stopPosting := sync.OnceFunc(func() { close(quit); <-posting })
	t.Cleanup(stopPosting)
	// more waits until n more orders were acked.
	more := func(what string, n int) {
		t.Helper()
		mu.Lock()
		want := len(acked) + n
		mu.Unlock()
		deadline := time.After(120 * time.Second)
		for {
			mu.Lock()
			got := len(acked)
			mu.Unlock()
			if got >= want {
				return
			}
			select {
			case <-progress:
			case <-deadline:
				t.Fatalf("%s: %d orders acked, want %d", what, got, want)
			}
		}
	}

	more("warm", 200)
	// The broker frozen: the orders are committed all the same, and wait in the
	// outbox.
	if err := broker.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	more("broker frozen", 300)
	// Frozen past the producer's WriteTimeout: a relay's pass has failed, and its
	// events, some perhaps already in the broker's socket, stay pending.
	relayFailed := map[string]string{"msg": "outbox relay pass failed; its events stay pending"}
	for deadline := time.Now().Add(60 * time.Second); replicas[0].p.Find(relayFailed) == nil && replicas[1].p.Find(relayFailed) == nil; {
		if time.Now().After(deadline) {
			t.Fatal("no relay pass failed with the broker frozen")
		}
		time.Sleep(50 * time.Millisecond) // polling the logs, not synchronising
	}
	if err := broker.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	more("broker thawed", 200)

	// Replicas rolled, one at a time, the new one serving before the old one stops.
	for i := range replicas {
		next := start()
		mu.Lock()
		live = append(live, next.addr)
		mu.Unlock()
		old := replicas[i]
		_ = old.p.Signal(syscall.SIGTERM)
		mu.Lock()
		for j, a := range live {
			if a == old.addr {
				live = append(live[:j], live[j+1:]...)
				break
			}
		}
		mu.Unlock()
		if code := exitCode(t, old.p); code != 0 {
			t.Errorf("rolled replica %d: exit code %d, want 0", i, code)
		}
		replicas[i] = next
		more(fmt.Sprintf("replica %d rolled", i), 200)
	}

	// PostgreSQL restarted: POSTs meanwhile are refused (503) and commit nothing.
	if err := pg.Restart(); err != nil {
		t.Fatal(err)
	}
	more("PostgreSQL restarted", 300)
	stopPosting()

	// Every committed order delivered, none twice.
	ctx := context.Background()
	var committed, lost, twice int
	deadline := time.Now().Add(120 * time.Second)
	for {
		if err := db.reconnect(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE deliveries = 0),
			count(*) FILTER (WHERE deliveries > 1) FROM orders`).Scan(&committed, &lost, &twice); err != nil {
			t.Fatal(err)
		}
		if lost == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling the store, not synchronising
	}
	var missing int
	if err := db.conn.QueryRow(ctx, `SELECT count(*) FROM unnest($1::text[]) a(id) WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = a.id)`,
		acked).Scan(&missing); err != nil {
		t.Fatal(err)
	}
	published := topicMessages(t, brokerAddr, ordersTopic)
	t.Logf("posted %d, acked %d, refused %d; committed %d; delivered %d; lost %d; stored twice %d; "+
		"published %d messages (%d repeats absorbed by the inbox)",
		posted, len(acked), refused, committed, committed-lost, lost, twice, published, published-int64(committed))
	if missing != 0 {
		t.Errorf("%d orders answered 202 are not in the store", missing)
	}
	if lost != 0 {
		t.Errorf("%d committed orders never delivered", lost)
	}
	if twice != 0 {
		t.Errorf("%d orders applied more than once", twice)
	}
	for _, r := range replicas {
		_ = r.p.Signal(syscall.SIGTERM)
	}
	for _, r := range replicas {
		if code := exitCode(t, r.p); code != 0 {
			t.Errorf("final SIGTERM: exit code %d, want 0", code)
		}
	}
}

// startDevBroker builds cmd/devbroker and runs it on addr with the example's topics,
// in a process of its own so that it can be frozen; it is killed when the test ends.
func startDevBroker(t *testing.T, addr string) *exec.Cmd {
	t.Helper()
	bin, err := proctest.Build(t.TempDir(), "github.com/servicewright/servicewright/cmd/devbroker")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-addr", addr, "-topic", ordersTopic+"=3", "-topic", deadLetters+"=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("devbroker not listening on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond) // waiting for a port, not synchronising
	}
}

// topicMessages sums the end offsets of topic's partitions: every message ever
// written to it.
func topicMessages(t *testing.T, broker, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := kafka.DialContext(ctx, "tcp", broker)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, p := range parts {
		c, err := kafka.DialLeader(ctx, "tcp", broker, topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		last, err := c.ReadLastOffset()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		n += last
	}
	return n
}

// reconnect replaces db's connection when the server closed it (a restart).
func (db *ordersDB) reconnect(ctx context.Context) error {
	if !db.conn.IsClosed() && db.conn.Ping(ctx) == nil {
		return nil
	}
	c, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		return err
	}
	old := db.conn
	db.conn = c
	old.Close(ctx)
	return nil
}
