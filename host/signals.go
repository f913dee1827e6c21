package host

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.uber.org/zap"
)

// InstallSignalHandlers calls stop on the first SIGINT, SIGTERM or SIGHUP, and exits
// the process at once with 128+signum on the second of any of them: an operator who
// signals twice wants the process gone, not a cleanup that may be hung. It returns a
// remover that restores the default handling; calling the remover more than once is
// harmless.
//
// SIGHUP is a graceful stop, as SIGTERM: a container runtime or a closing terminal
// sends it to end the process, and Go's default for it — exit at once, with no
// drain, no log line and no report — would drop what the orderly exit exists to save.
// SIGQUIT is deliberately left to Go's runtime: it writes every goroutine's stack to
// stderr and exits with ExitQuit (2), with no drain and no report. It is the one way
// to see where a hung process is stuck, and an operator sends it for that.
//
// Main installs these handlers for the length of the run, and logs each signal
// through the Host's logger: the first naming the signal, the second with the exit
// code, before the process exits. Run and Host.Run install none: a caller that
// brings its own ctx owns the signals.
func InstallSignalHandlers(stop func()) (uninstall func()) {
	return installSignalHandlers(stop, os.Exit, zap.NewNop())
}

func installSignalHandlers(stop func(), exit func(int), log *zap.Logger) (uninstall func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		seen := 0
		for {
			select {
			case sig := <-ch:
				seen++
				if seen == 1 {
					log.Info("signal received; beginning the graceful shutdown (a second one exits at once)",
						zap.String("signal", signalName(sig)))
					stop()
					continue
				}
				code := ExitSignal + int(sig.(syscall.Signal))
				log.Error("second signal received; exiting at once without finishing the shutdown",
					zap.String("signal", signalName(sig)), zap.Int("exit_code", code))
				_ = log.Sync()
				exit(code)
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

// signalName is the name an operator types: "SIGTERM", "SIGINT", "SIGHUP".
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// Main runs spec as the process's main function: it builds the Host, makes its
// tracer provider and propagator OpenTelemetry's global ones (for libraries
// instrumented through the globals), installs the signal handlers, runs, removes
// the handlers and exits with ExitCode of the result — 0 after a graceful exit, 1 for
// a failure, 3 for a task's permanent failure, 75 for an interrupted task, 78 for
// invalid configuration — or with 128+signum on a second signal (2 on SIGQUIT, Go's
// own; see InstallSignalHandlers). A configuration error is always written to
// stderr, even when it is the logger's own configuration that failed. It does not
// return.
func Main(spec AppSpec, opts ...Option) {
	os.Exit(main(spec, opts...))
}

func main(spec AppSpec, opts ...Option) int {
	h, err := New(spec, opts...)
	if err != nil {
		return ExitCode(err)
	}
	return h.main()
}

// Main runs h as the process's main function, as the package's Main does with a spec
// for a Host built with New and completed with Register: it installs the signal
// handlers, runs, removes the handlers and exits with ExitCode of the result. It
// does not return.
func (h *Host) Main() { os.Exit(h.main()) }

func (h *Host) main() int {
	h.tel.install()
	uninstall := installSignalHandlers(h.Shutdown().Begin, os.Exit, h.log)
	defer uninstall()
	return ExitCode(h.Run(context.Background()))
}
