package telemetry

import (
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// gatedWriter takes nothing until gate is closed, as a pipe nobody reads; fail makes
// each write fail, as a pipe whose reader closed.
type gatedWriter struct {
	gate chan struct{}
	fail bool

	mu    sync.Mutex
	lines []string
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	<-w.gate
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail {
		return 0, syscall.EPIPE
	}
	w.lines = append(w.lines, string(p))
	return len(p), nil
}

func (w *gatedWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "")
}

func sinkLogger(s *Sink) *zap.Logger {
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), s, zapcore.DebugLevel))
	s.SetReporter(log)
	return log
}

// TestLogSink: a destination that stops reading holds up no writer: lines beyond the
// buffer are dropped and counted, Sync gives up after its bound, and once the
// destination reads again every buffered line arrives, followed by one line saying
// how many were lost.
func TestLogSink(t *testing.T) {
	t.Run("a stalled destination", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := &gatedWriter{gate: make(chan struct{})}
			s := NewSink(w, 1024)
			log := sinkLogger(s)
			for range 100 {
				log.Info("a line of about a hundred bytes once encoded, to fill the buffer")
			}
			if err := s.Sync(); !errors.Is(err, errLogStalled) {
				t.Fatalf("Sync on a stalled destination: %v, want errLogStalled", err)
			}
			dropped := s.dropped.Load()
			if dropped == 0 || dropped >= 100 {
				t.Fatalf("dropped %d of 100 lines into a 1 KiB buffer", dropped)
			}
			close(w.gate)
			if err := s.Sync(); err != nil {
				t.Fatalf("Sync once the destination reads: %v", err)
			}
			out := w.text()
			if got := strings.Count(out, "to fill the buffer"); uint64(got) != 100-dropped {
				t.Errorf("%d lines written, want the %d buffered", got, 100-dropped)
			}
			if !strings.Contains(out, `"msg":"log lines lost`) || !strings.Contains(out, `"dropped_total":`) {
				t.Errorf("no line reporting the loss:\n%s", out)
			}
		})
	})
	t.Run("a destination that went away", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := &gatedWriter{gate: make(chan struct{}), fail: true}
			close(w.gate)
			s := NewSink(w, 1<<20)
			log := sinkLogger(s)
			log.Info("one")
			log.Info("two")
			if err := s.Sync(); err != nil {
				t.Fatalf("Sync: %v", err)
			}
			if got := s.failed.Load(); got != 2 {
				t.Errorf("failed %d, want 2", got)
			}
		})
	})
}
