package host

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// InstallSignalHandlers calls stop on the first SIGINT or SIGTERM, and exits the
// process at once with 128+signum on the second: an operator who signals twice wants
// the process gone, not a cleanup that may be hung. It returns a remover that
// restores the default handling; calling the remover more than once is harmless.
//
// Main installs these handlers for the length of the run. Run and Host.Run install
// none: a caller that brings its own ctx owns the signals.
func InstallSignalHandlers(stop func()) (uninstall func()) {
	return installSignalHandlers(stop, os.Exit)
}

func installSignalHandlers(stop func(), exit func(int)) (uninstall func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		seen := 0
		for {
			select {
			case sig := <-ch:
				seen++
				if seen == 1 {
					stop()
					continue
				}
				exit(128 + int(sig.(syscall.Signal)))
				return
			case <-done:
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			wg.Wait()
		})
	}
}

// Main runs spec as the process's main function: it builds the Host, makes its
// tracer provider and propagator OpenTelemetry's global ones (for libraries
// instrumented through the globals), installs the signal handlers, runs, removes the handlers and exits with ExitCode of the result —
// 0 after a graceful exit, 78 for invalid configuration, 1 for a failure, 128+signum
// on a second signal. It does not return.
func Main(spec AppSpec, opts ...Option) {
	os.Exit(main(spec, opts...))
}

func main(spec AppSpec, opts ...Option) int {
	h, err := New(spec, opts...)
	if err != nil {
		return ExitCode(err)
	}
	h.tel.install()
	uninstall := InstallSignalHandlers(h.Shutdown().Begin)
	defer uninstall()
	return ExitCode(h.Run(context.Background()))
}
