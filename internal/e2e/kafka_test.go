package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/internal/proctest"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

// TestKafkaRestarts runs two replicas of the example in one consumer group on topic
// "orders" of a broker in the test process, while kcat — librdkafka, a client
// independent of the consumer's — produces 20,000 orders, and restarts one replica
// five times mid-stream. Gracefully (SIGTERM) every order is stored exactly once:
// none lost, none delivered again, although each restart moves partitions away from
// the other replica twice. Killed (SIGKILL), none is lost, and the orders stored
// twice — what the killed replicas had handled and not committed — are counted.
func TestKafkaRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts several replicas")
	}
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kcat not found (apt-get install -y kcat); CI must not skip")
		}
		t.Skip("kcat not found (apt-get install -y kcat)")
	}
	pg := env.Postgres(t)

	t.Run("SIGTERM: every order stored exactly once", func(t *testing.T) {
		dup := kafkaRestarts(t, kcat, pg.DSN(), syscall.SIGTERM)
		if dup.rows != 0 {
			t.Errorf("%d orders stored more than once (%d extra deliveries), want none", dup.rows, dup.extra)
		}
	})
	t.Run("SIGKILL: no order lost", func(t *testing.T) {
		dup := kafkaRestarts(t, kcat, pg.DSN(), syscall.SIGKILL)
		t.Logf("after %d kills: %d orders stored more than once, %d extra deliveries "+
			"(handled by a killed replica and not committed)", kafkaRestartCount, dup.rows, dup.extra)
	})
}

const (
	kafkaOrders       = 20000
	kafkaRestartCount = 5
)

type duplicates struct {
	rows  int // orders with deliveries > 1
	extra int // deliveries beyond the first, summed
}

// kafkaRestarts runs the scenario with sig as the restart signal and checks that
// every order is stored; it returns the duplicates.
func kafkaRestarts(t *testing.T, kcat, dsn string, sig syscall.Signal) duplicates {
	cluster, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Topics: map[string]int{ordersTopic: 6, deadLetters: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close) // after the replicas' cleanups, which are registered later
	name := "kafka_restarts_term"
	if sig == syscall.SIGKILL {
		name = "kafka_restarts_kill"
	}
	db := freshDatabase(t, dsn, name)
	replicaEnv := []string{
		"KAFKA_BROKERS=" + cluster.Addr(), "DATABASE_URL=" + db.dsn,
		"SW_DRAIN_DELAY=200ms",
	}
	start := func() *proctest.Proc {
		p, _ := startExample(t, replicaEnv...)
		mustLog(t, p, stage("serve"), 20*time.Second)
		return p
	}
	stable, restarted := start(), start()

	began := time.Now()
	produced := produceOrders(t, kcat, cluster.Addr())
	stored := 0
	for i := range kafkaRestartCount {
		// Stop it while it holds partitions and the stream flows through it.
		waitAssigned(t, restarted, 20*time.Second)
		stored = db.waitOrders(t, stored+1000, 2*time.Second, false)
		_ = restarted.Signal(sig)
		code, want := exitCode(t, restarted), 0
		if sig == syscall.SIGKILL {
			want = 128 + int(syscall.SIGKILL)
		}
		if code != want {
			t.Fatalf("restart %d: exit code %d after %v, want %d", i+1, code, sig, want)
		}
		if sig == syscall.SIGKILL {
			// The coordinator drops a killed member once its session times out
			// (kafkaentry's SessionTimeout, 10s); the test drops it at once, so that
			// five kills do not cost five session timeouts. What is measured — the
			// messages it handled and did not commit, delivered again to the next
			// owner — is the same.
			expireMember(t, cluster.Addr(), memberID(t, restarted))
		}
		t.Logf("restart %d at %v: %d orders stored", i+1, time.Since(began).Round(time.Millisecond), stored)
		restarted = start()
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	db.waitOrders(t, kafkaOrders, 60*time.Second, true)
	t.Logf("all %d orders stored after %v", kafkaOrders, time.Since(began).Round(time.Millisecond))
	// Both stop gracefully, so that whatever they still had in flight is stored.
	for _, p := range []*proctest.Proc{stable, restarted} {
		_ = p.Signal(syscall.SIGTERM)
	}
	for _, p := range []*proctest.Proc{stable, restarted} {
		if code := exitCode(t, p); code != 0 {
			t.Errorf("final SIGTERM: exit code %d, want 0", code)
		}
	}
	return db.check(t)
}

// produceOrders pipes kafkaOrders orders into one kcat -P process, in chunks paced
// so that the stream lasts through the restarts, and returns a channel that gets
// kcat's result.
func produceOrders(t *testing.T, kcat, broker string) <-chan error {
	t.Helper()
	const chunk, pace = 500, 150 * time.Millisecond
	cmd := exec.Command(kcat, "-P", "-b", broker, "-t", ordersTopic, "-K:")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(in)
		var werr error
		for i := 0; i < kafkaOrders && werr == nil; i++ {
			id := orderID(i)
			_, werr = fmt.Fprintf(w, `%s:{"id":%q,"item":"item-%d","qty":1}`+"\n", id, id, i%7)
			if (i+1)%chunk == 0 && werr == nil {
				werr = w.Flush()
				time.Sleep(pace)
			}
		}
		if werr == nil {
			werr = w.Flush()
		}
		_ = in.Close()
		if err := cmd.Wait(); err != nil || werr != nil {
			done <- fmt.Errorf("kcat -P: %v %v\n%s", werr, err, out.String())
			return
		}
		done <- nil
	}()
	return done
}

func orderID(i int) string { return fmt.Sprintf("order-%05d", i) }

// memberID returns the group member ID p's consumer was last assigned partitions
// as.
func memberID(t *testing.T, p *proctest.Proc) string {
	t.Helper()
	id := ""
	for _, e := range p.Entries() {
		if m, ok := e["member"].(string); ok && e["msg"] == "partitions assigned" {
			id = m
		}
	}
	if id == "" {
		t.Fatal("the replica never logged its group member ID")
	}
	return id
}

// expireMember removes member id from the group "orders", as the coordinator does
// when the member's session times out.
func expireMember(t *testing.T, broker, id string) {
	t.Helper()
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(broker), Transport: transport}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := client.LeaveGroup(ctx, &kafka.LeaveGroupRequest{
		GroupID: "orders", Members: []kafka.LeaveGroupRequestMember{{ID: id}},
	})
	if err == nil {
		err = resp.Error
	}
	if err == nil && len(resp.Members) == 1 && !errors.Is(resp.Members[0].Error, kafka.UnknownMemberId) {
		err = resp.Members[0].Error
	}
	if err != nil {
		t.Fatalf("remove the killed member %s from the group: %v", id, err)
	}
}

// waitAssigned waits until p logged that the group assigned it partitions.
func waitAssigned(t *testing.T, p *proctest.Proc, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, e := range p.Entries() {
			if parts, ok := e["partitions"].([]any); ok && e["msg"] == "partitions assigned" && len(parts) > 0 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no partitions assigned within %v", timeout)
}

// ordersDB is a database of its own for one scenario.
type ordersDB struct {
	dsn  string
	conn *pgx.Conn
}

// freshDatabase (re)creates database name on the server of dsn and connects to it.
func freshDatabase(t *testing.T, dsn, name string) *ordersDB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, q := range []string{"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)", "CREATE DATABASE " + name} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db := &ordersDB{dsn: u.String()}
	if db.conn, err = pgx.Connect(ctx, db.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.conn.Close(context.Background()) })
	return db
}

// count returns how many orders are stored (0 before a replica created the table).
func (db *ordersDB) count(t *testing.T) int {
	t.Helper()
	var exists bool
	if err := db.conn.QueryRow(context.Background(), `SELECT to_regclass('orders') IS NOT NULL`).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		return 0
	}
	var n int
	if err := db.conn.QueryRow(context.Background(), `SELECT count(*) FROM orders`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitOrders waits until at least n orders are stored, at most timeout, and returns
// the count. Past the timeout it fails the test when must is set, and otherwise
// returns the count so far: a pace, not a check.
func (db *ordersDB) waitOrders(t *testing.T, n int, timeout time.Duration, must bool) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := db.count(t)
		if got >= n || time.Now().After(deadline) {
			if got < n && must {
				t.Fatalf("%d orders stored after %v, want %d", got, timeout, n)
			}
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check asserts that exactly the produced orders are stored, and returns the ones
// stored more than once.
func (db *ordersDB) check(t *testing.T) duplicates {
	t.Helper()
	ctx := context.Background()
	rows, err := db.conn.Query(ctx, `SELECT id, deliveries FROM orders`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var dup duplicates
	for rows.Next() {
		var id string
		var deliveries int
		if err := rows.Scan(&id, &deliveries); err != nil {
			t.Fatal(err)
		}
		seen[id] = true
		if deliveries > 1 {
			dup.rows++
			dup.extra += deliveries - 1
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for i := range kafkaOrders {
		if !seen[orderID(i)] {
			lost++
			if lost <= 5 {
				t.Errorf("order %s is not stored", orderID(i))
			}
		}
	}
	if lost > 0 || len(seen) != kafkaOrders {
		t.Errorf("%d orders stored, %d of the %d produced missing", len(seen), lost, kafkaOrders)
	}
	return dup
}
