package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// monitor prints a line a second and records the leadership history.
type monitor struct {
	f       *fleet
	l       *load
	history []string // "replica-2 token 3"
}

func newMonitor(f *fleet, l *load) *monitor { return &monitor{f: f, l: l} }

func (m *monitor) run(ctx context.Context) {
	client := &http.Client{Timeout: 300 * time.Millisecond}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastOK, lastFailed int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ok, failed := m.l.ok.Load(), m.l.failed.Load()
		leaderNow, inFlight := "none", 0
		var phases []string
		for _, r := range m.f.replicas {
			lc, up := r.lifecycle(client)
			if !up {
				phases = append(phases, r.name+"=down")
				continue
			}
			phases = append(phases, r.name+"="+lc.Phase)
			for _, e := range lc.Entrypoints {
				inFlight += e.InFlight
			}
			if l, ok := lc.Leadership["digest-publisher"]; ok && l.Held {
				leaderNow = fmt.Sprintf("%s token %d", r.name, l.Token)
			}
		}
		if leaderNow != "none" && (len(m.history) == 0 || m.history[len(m.history)-1] != leaderNow) {
			m.history = append(m.history, leaderNow)
		}
		say("%4d req/s  errors %-3d  leader %-20s  in-flight %-3d  %s",
			ok+failed-lastOK-lastFailed, failed-lastFailed, leaderNow, inFlight, strings.Join(phases, " "))
		lastOK, lastFailed = ok, failed
	}
}

// summary prints the totals and checks every accepted order in PostgreSQL.
func summary(l *load, m *monitor, dsn string) {
	ok, failed := l.ok.Load(), l.failed.Load()
	fmt.Println()
	fmt.Printf("requests: %d   failed: %d", ok+failed, failed)
	if len(l.firstFailures) > 0 {
		fmt.Printf("   first failures: %s", strings.Join(l.firstFailures, "; "))
	}
	fmt.Println()
	fmt.Printf("leader changes: %d   history: %s\n", max(len(m.history)-1, 0), strings.Join(m.history, " → "))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		fmt.Println("orders: cannot read PostgreSQL:", err)
		return
	}
	defer db.Close(ctx)
	l.mu.Lock()
	ids := append([]string(nil), l.accepted...)
	l.mu.Unlock()
	var present, twice int
	for ctx.Err() == nil { // the consumers may still be finishing the last orders
		_ = db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE deliveries > 1) FROM orders WHERE id = ANY($1)`, ids).
			Scan(&present, &twice)
		if present == len(ids) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("orders accepted: %d   stored: %d   lost: %d   handled twice: %d\n", len(ids), present, len(ids)-present, twice)
}
