package host

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// buildStopTimeout is how long Main lets New go on after a stop signal that arrives
// while it builds the container (a slow constructor, a dependency that does not
// answer): if New returns within it, the stop is honoured as one during startup
// (the orderly exit, exit 0); if not, the build is abandoned, logged, and Main exits
// with ExitFailure.
const buildStopTimeout = 5 * time.Second

// signalHandler is Main's handling of the process's signals. It calls stop on the
// first SIGINT, SIGTERM or SIGHUP, and exits the process at once with 128+signum on
// the second of any of them: an operator who signals twice wants the process gone,
// not a cleanup that may be hung. uninstall restores the default handling; calling it
// more than once is harmless.
//
// SIGHUP is a graceful stop, as SIGTERM: a container runtime or a closing terminal
// sends it to end the process, and Go's default for it — exit at once, with no
// drain, no log line and no report — would drop what the orderly exit exists to save.
// SIGQUIT is deliberately left to Go's runtime: it writes every goroutine's stack to
// stderr and exits with ExitQuit (2), with no drain and no report. It is the one way
// to see where a hung process is stuck, and an operator sends it for that.
//
// SIGPIPE is survived: a write to stdout or stderr whose reader went away fails with
// EPIPE instead of killing the process (Go's default), so the drain still runs; Main
// counts each in servicewright_sigpipe_total.
//
// Nothing here waits on output: the first signal calls stop before anything is
// logged, and the second exits without touching the logger. Main installs these
// handlers first thing, before New, and logs the first signal through the Host's
// logger once stop was called (a signal during New: once New returned). Run and
// Host.Run install none: a caller that brings its own ctx owns the signals.
//
// A signalHandler is installed before the Host exists: attach tells it what the first
// signal stops and where it is logged.
type signalHandler struct {
	exit     func(int)
	ch       chan os.Signal
	done     chan struct{}
	first    chan struct{} // closed at the first stop signal
	wg       sync.WaitGroup
	once     sync.Once
	sigpipes atomic.Uint64

	mu   sync.Mutex
	sig  os.Signal   // the first stop signal; nil before it
	stop func()      // nil until attach
	log  *zap.Logger // nil until attach
}

func newSignalHandler(exit func(int)) *signalHandler {
	s := &signalHandler{exit: exit, ch: make(chan os.Signal, 4), done: make(chan struct{}), first: make(chan struct{})}
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	s.wg.Go(s.loop)
	return s
}

func (s *signalHandler) loop() {
	for {
		select {
		case sig := <-s.ch:
			if sig == syscall.SIGPIPE {
				s.sigpipes.Add(1)
				continue
			}
			s.mu.Lock()
			if s.sig != nil {
				s.mu.Unlock()
				s.exit(ExitSignal + int(sig.(syscall.Signal))) // no log: the output may be what hangs
				return
			}
			s.sig = sig
			close(s.first)
			stop, log := s.stop, s.log
			s.mu.Unlock()
			if stop != nil {
				stop()
				logSignal(log, sig)
			}
		case <-s.done:
			return
		}
	}
}

// attach makes stop what the first signal calls and log where it is said. When the
// first signal already came (during New), attach calls stop and logs it now.
func (s *signalHandler) attach(stop func(), log *zap.Logger) {
	s.mu.Lock()
	s.stop, s.log = stop, log
	sig := s.sig
	s.mu.Unlock()
	if sig != nil {
		stop()
		log.Info("signal received while the container was being built; nothing was started, and the graceful shutdown begins",
			zap.String("signal", signalName(sig)))
	}
}

// stopped is a context cancelled at the first stop signal.
func (s *signalHandler) stopped() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.first:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// signal is the first stop signal received, or nil.
func (s *signalHandler) signal() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sig
}

// collector is servicewright_sigpipe_total.
func (s *signalHandler) collector() prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "servicewright_sigpipe_total",
		Help: "SIGPIPE signals survived: a write to stdout or stderr whose reader had gone away."},
		func() float64 { return float64(s.sigpipes.Load()) })
}

func (s *signalHandler) uninstall() {
	s.once.Do(func() {
		signal.Stop(s.ch)
		close(s.done)
		s.wg.Wait()
	})
}

func logSignal(log *zap.Logger, sig os.Signal) {
	log.Info("signal received; beginning the graceful shutdown (a second one exits at once)",
		zap.String("signal", signalName(sig)))
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

// withSignals hands New Main's signal handler, for its metric.
func withSignals(s *signalHandler) Option { return func(o *options) { o.signals = s } }

// Main runs spec as the process's main function: it installs the signal handlers,
// builds the Host, makes its tracer provider and propagator OpenTelemetry's global
// ones (for libraries instrumented through the globals), runs, removes the handlers
// and exits with ExitCode of the result — 0 after a graceful exit, 1 for a failure,
// 3 for a task's permanent failure, 75 for an interrupted task, 78 for invalid
// configuration — or with 128+signum on a second signal (2 on SIGQUIT, Go's own;
// see signalHandler). A configuration error is always written to stderr,
// even when it is the logger's own configuration that failed. It does not return.
//
// A stop signal while New builds the container is honoured when New returns: the
// Host runs the orderly exit of a stop during startup (nothing was started; exit 0).
// A build that has not returned buildStopTimeout after the signal is abandoned: Main
// logs it and exits with ExitFailure.
func Main(spec AppSpec, opts ...Option) {
	os.Exit(main(spec, opts...))
}

func main(spec AppSpec, opts ...Option) int {
	sh := newSignalHandler(os.Exit)
	defer sh.uninstall()
	ctx, cancel := sh.stopped()
	defer cancel()
	var h *Host
	err := safe.Bounded(ctx, "container build", buildStopTimeout, func(context.Context) error {
		var err error
		h, err = New(spec, append(opts[:len(opts):len(opts)], withSignals(sh))...)
		return err
	})
	if errors.Is(err, fault.ErrAbandoned) {
		log := fallbackLogger(spec.ServiceName)
		log.Error("stop requested while the container was being built, which did not end in time; abandoning it (nothing was started)",
			zap.String("signal", signalName(sh.signal())), zap.Duration("waited", buildStopTimeout), zap.Int("exit_code", ExitFailure))
		_ = log.Sync()
		return ExitFailure
	}
	if _, ok := errors.AsType[*fault.PanicError](err); ok { // New logged any other error
		log := fallbackLogger(spec.ServiceName)
		log.Error("building the container panicked; nothing was started", zap.Error(err))
		_ = log.Sync()
	}
	if err != nil {
		return ExitCode(err)
	}
	return h.mainWith(sh)
}

// Main runs h as the process's main function, as the package's Main does with a spec
// for a Host built with New and completed with Register: it installs the signal
// handlers, runs, removes the handlers and exits with ExitCode of the result. It
// does not return.
func (h *Host) Main() { os.Exit(h.main()) }

func (h *Host) main() int {
	sh := newSignalHandler(os.Exit)
	defer sh.uninstall()
	return h.mainWith(sh)
}

func (h *Host) mainWith(sh *signalHandler) int {
	h.tel.install()
	sh.attach(h.Shutdown().Begin, h.log)
	return ExitCode(h.Run(context.Background()))
}
