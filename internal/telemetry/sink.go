package telemetry

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Bounds of the Host's own log output (Sink).
const (
	// logBufferBytes is how much log output waits for a slow destination before
	// new lines are dropped.
	logBufferBytes = 1 << 20
	// logSyncTimeout bounds Sync: how long the exit waits for a destination that is
	// not reading before it goes on without the lines still waiting. Main waits at
	// most this long once more, after the shutdown report, before it exits.
	logSyncTimeout = 500 * time.Millisecond
)

// errLogStalled is Sync's error when the destination did not take what waits for it
// within logSyncTimeout.
var errLogStalled = errors.New("the log destination is not reading")

// Sink is the Host's log output when it writes to stderr: a write never waits for
// the destination. A line is copied into a bounded buffer and written out by a
// goroutine that runs only while there is something to write, so that a destination
// that stops reading (a stalled log shipper, a full pipe) or goes away (its reader
// closed: EPIPE) holds up no signal handler, probe, request or drain: only that
// goroutine waits. When the buffer is full, new lines are dropped and counted; when
// a write fails, its lines are counted as lost. Once the destination takes a line
// again, one line says how many were dropped (report). Sync waits for the buffer to
// be written, but no longer than logSyncTimeout.
//
// It does not make the destination itself faster, and a write already blocked in
// the kernel stays blocked until the destination reads or the process exits.
type Sink struct {
	out io.Writer
	max int

	mu      sync.Mutex
	pending [][]byte // lines not yet written, in order
	size    int      // bytes in pending
	running bool     // the writer goroutine is running
	idle    chan struct{}
	report  func(dropped, failed uint64) // called once the destination takes lines again

	dropped   atomic.Uint64 // lines dropped because the buffer was full, since the start
	failed    atomic.Uint64 // lines whose write failed (EPIPE, EIO …), since the start
	reported  atomic.Uint64 // dropped+failed already reported
	reporting atomic.Bool
}

// NewSink returns a sink writing to out, buffering at most max bytes.
func NewSink(out io.Writer, max int) *Sink {
	idle := make(chan struct{})
	close(idle)
	return &Sink{out: out, max: max, idle: idle}
}

// Write queues a copy of p and returns at once; it never fails. When the buffer
// cannot take p, p is dropped and counted.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.size+len(p) > s.max {
		s.mu.Unlock()
		s.dropped.Add(1)
		return len(p), nil
	}
	s.pending = append(s.pending, append([]byte(nil), p...))
	s.size += len(p)
	if !s.running {
		s.running = true
		s.idle = make(chan struct{})
		go s.drain(s.idle)
	}
	s.mu.Unlock()
	return len(p), nil
}

// drain writes what is pending until nothing is, then closes idle and returns.
// Sync waits on idle, bounded.
func (s *Sink) drain(idle chan struct{}) {
	for {
		s.mu.Lock()
		batch := s.pending
		s.pending, s.size = nil, 0
		if len(batch) == 0 {
			s.running = false
			close(idle)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		wrote := false
		for _, line := range batch {
			if _, err := s.out.Write(line); err != nil {
				s.failed.Add(1)
				continue
			}
			wrote = true
		}
		if wrote {
			s.reportLoss()
		}
	}
}

// reportLoss calls report with what was lost since the last report, once the
// destination takes lines again; the line it logs goes through Write like any other.
func (s *Sink) reportLoss() {
	d, f := s.dropped.Load(), s.failed.Load()
	s.mu.Lock()
	report := s.report
	s.mu.Unlock()
	if d+f == s.reported.Load() || report == nil || !s.reporting.CompareAndSwap(false, true) {
		return
	}
	defer s.reporting.Store(false)
	s.reported.Store(d + f)
	report(d, f)
}

// Sync waits until every line written before it has been handed to the destination,
// but no longer than logSyncTimeout; then it returns errLogStalled with how much is
// still waiting. It does not sync the destination itself (stderr has nothing to
// sync).
func (s *Sink) Sync() error {
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	t := time.NewTimer(logSyncTimeout)
	defer t.Stop()
	select {
	case <-idle:
		return nil
	case <-t.C:
		s.mu.Lock()
		n := len(s.pending)
		s.mu.Unlock()
		return fmt.Errorf("%w: %d lines still waiting after %s", errLogStalled, n, logSyncTimeout)
	}
}

// collectors are the sink's metrics: servicewright_log_lines_lost_total{reason},
// "dropped" (the buffer was full: the destination stalled) or "failed" (the write
// failed: the destination went away).
func (s *Sink) Collectors() []prometheus.Collector {
	const name, help = "servicewright_log_lines_lost_total",
		"Log lines of the Host's own output that never reached stderr: dropped (the destination stopped reading and the buffer was full) or failed (the write failed, e.g. EPIPE)."
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"reason": "dropped"}},
			func() float64 { return float64(s.dropped.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"reason": "failed"}},
			func() float64 { return float64(s.failed.Load()) }),
	}
}

// SetReporter makes log the logger of the line that reports lost lines: "log lines
// lost; the destination stalled or went away", with the totals since the start.
func (s *Sink) SetReporter(log *zap.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report = func(dropped, failed uint64) {
		log.Warn("log lines lost: the log destination stalled or went away, and is writable again",
			zap.Uint64("dropped_total", dropped), zap.Uint64("failed_total", failed))
	}
}
