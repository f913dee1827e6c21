package host

import (
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestSignalHandlers(t *testing.T) {
	stops := make(chan struct{}, 2)
	exits := make(chan int, 1)
	core, logs := observer.New(zap.InfoLevel)
	uninstall := installSignalHandlers(func() { stops <- struct{}{} }, func(code int) { exits <- code }, zap.New(core))
	defer uninstall()

	self, _ := os.FindProcess(os.Getpid())
	_ = self.Signal(syscall.SIGTERM)
	select {
	case <-stops:
	case <-time.After(5 * time.Second):
		t.Fatal("first SIGTERM did not call stop")
	}
	_ = self.Signal(syscall.SIGINT)
	select {
	case code := <-exits:
		if code != 130 {
			t.Errorf("second signal exit code %d, want 130", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second signal did not exit")
	}
	first := logs.FilterField(zap.String("signal", "SIGTERM")).FilterMessageSnippet("beginning the graceful shutdown")
	second := logs.FilterField(zap.Int("exit_code", 130)).FilterMessageSnippet("second signal")
	if first.Len() != 1 || second.Len() != 1 {
		t.Errorf("signals not logged: %v", logs.All())
	}
	if len(stops) != 0 {
		t.Error("stop called twice")
	}
	uninstall()
	uninstall() // idempotent
}

// TestSIGHUPStopsGracefully: SIGHUP is a stop like SIGTERM, logged by name; a second
// one exits with 128+1.
func TestSIGHUPStopsGracefully(t *testing.T) {
	stops := make(chan struct{}, 2)
	exits := make(chan int, 1)
	core, logs := observer.New(zap.InfoLevel)
	uninstall := installSignalHandlers(func() { stops <- struct{}{} }, func(code int) { exits <- code }, zap.New(core))
	defer uninstall()

	self, _ := os.FindProcess(os.Getpid())
	_ = self.Signal(syscall.SIGHUP)
	select {
	case <-stops:
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP did not call stop")
	}
	_ = self.Signal(syscall.SIGHUP)
	select {
	case code := <-exits:
		if code != ExitSignal+1 {
			t.Errorf("second SIGHUP exit code %d, want 129", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second SIGHUP did not exit")
	}
	if logs.FilterField(zap.String("signal", "SIGHUP")).FilterMessageSnippet("beginning the graceful shutdown").Len() != 1 {
		t.Errorf("SIGHUP not logged by name: %v", logs.All())
	}
}
