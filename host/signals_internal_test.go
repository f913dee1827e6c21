package host

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestSignalHandlers(t *testing.T) {
	stops := make(chan struct{}, 2)
	exits := make(chan int, 1)
	uninstall := installSignalHandlers(func() { stops <- struct{}{} }, func(code int) { exits <- code })
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
	if len(stops) != 0 {
		t.Error("stop called twice")
	}
	uninstall()
	uninstall() // idempotent
}
