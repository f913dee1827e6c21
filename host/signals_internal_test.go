package host

import (
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestSignalHandlers: the first stop signal begins the graceful shutdown before
// anything is logged, then logs it by name; a second exits at once with 128+its
// number without touching the logger (the output may be what hangs). SIGHUP is a
// stop like SIGTERM and SIGINT.
func TestSignalHandlers(t *testing.T) {
	for _, tc := range []struct {
		first, second syscall.Signal
	}{
		{syscall.SIGTERM, syscall.SIGINT},
		{syscall.SIGHUP, syscall.SIGHUP},
	} {
		t.Run(signalName(tc.first)+" then "+signalName(tc.second), func(t *testing.T) {
			stops := make(chan int, 2) // the lines logged when stop was called
			exits := make(chan int, 1)
			core, logs := observer.New(zap.InfoLevel)
			s := newSignalHandler(func(code int) { exits <- code })
			defer s.uninstall()
			s.attach(func() { stops <- logs.Len() }, zap.New(core))

			self, _ := os.FindProcess(os.Getpid())
			_ = self.Signal(tc.first)
			select {
			case logged := <-stops:
				if logged != 0 {
					t.Errorf("%d lines logged before stop was called, want 0", logged)
				}
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
			if first.Len() != 1 || logs.Len() != 1 {
				t.Errorf("want the first signal logged by name and nothing for the second: %v", logs.All())
			}
			if len(stops) != 0 {
				t.Error("stop called twice")
			}
			s.uninstall()
			s.uninstall() // idempotent
		})
	}
}

// TestSignalDuringBuild: a signal before attach (while New builds the container) is
// remembered; attach calls stop at once and says so.
func TestSignalDuringBuild(t *testing.T) {
	s := newSignalHandler(func(int) { t.Error("exit called") })
	defer s.uninstall()
	self, _ := os.FindProcess(os.Getpid())
	_ = self.Signal(syscall.SIGTERM)
	<-s.first
	core, logs := observer.New(zap.InfoLevel)
	stopped := false
	s.attach(func() { stopped = true }, zap.New(core))
	if !stopped {
		t.Error("attach after a signal did not call stop")
	}
	if logs.FilterField(zap.String("signal", "SIGTERM")).FilterMessageSnippet("while the container was being built").Len() != 1 {
		t.Errorf("the signal during the build is not logged: %v", logs.All())
	}
}
