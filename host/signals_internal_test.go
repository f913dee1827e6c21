package host

import (
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestSignalHandlers: the first stop signal begins the graceful shutdown, logged by
// name; a second exits at once with 128+its number, logged too. SIGHUP is a stop
// like SIGTERM and SIGINT.
func TestSignalHandlers(t *testing.T) {
	for _, tc := range []struct {
		first, second syscall.Signal
	}{
		{syscall.SIGTERM, syscall.SIGINT},
		{syscall.SIGHUP, syscall.SIGHUP},
	} {
		t.Run(signalName(tc.first)+" then "+signalName(tc.second), func(t *testing.T) {
			stops := make(chan struct{}, 2)
			exits := make(chan int, 1)
			core, logs := observer.New(zap.InfoLevel)
			uninstall := installSignalHandlers(func() { stops <- struct{}{} }, func(code int) { exits <- code }, zap.New(core))
			defer uninstall()

			self, _ := os.FindProcess(os.Getpid())
			_ = self.Signal(tc.first)
			select {
			case <-stops:
			case <-time.After(5 * time.Second):
				t.Fatalf("the first %v did not call stop", tc.first)
			}
			_ = self.Signal(tc.second)
			want := ExitSignal + int(tc.second)
			select {
			case code := <-exits:
				if code != want {
					t.Errorf("second signal exit code %d, want %d", code, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the second signal did not exit")
			}
			first := logs.FilterField(zap.String("signal", signalName(tc.first))).FilterMessageSnippet("beginning the graceful shutdown")
			second := logs.FilterField(zap.Int("exit_code", want)).FilterMessageSnippet("second signal")
			if first.Len() != 1 || second.Len() != 1 {
				t.Errorf("signals not logged by name: %v", logs.All())
			}
			if len(stops) != 0 {
				t.Error("stop called twice")
			}
			uninstall()
			uninstall() // idempotent
		})
	}
}
