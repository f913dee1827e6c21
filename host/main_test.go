package host_test

import (
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Start the signal package's watcher outside any synctest bubble, so a test
	// that installs handlers inside one does not own it.
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR2)
	signal.Stop(c)
	goleak.VerifyTestMain(m)
}
