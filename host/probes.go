package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/internal/prestop"
	"github.com/servicewright/servicewright/internal/transport"
)

// defaultProbeAddr is where the probe listener listens when AppSpec.Probes.Addr is
// empty.
const defaultProbeAddr = ":8079"

// The probe listener's limits. The kubelet opens a connection per probe, sends its
// request at once and never reuses the connection, so a connection idle for a second
// or slow to send its header is not a probe; /metrics scrapers that keep one open
// reconnect. The header limit is net/http's default divided by 64: a probe sends a
// few hundred bytes.
const (
	probeMaxHeaderBytes  = 16 << 10
	probeReadHeaderLimit = 2 * time.Second
	probeReadLimit       = 5 * time.Second
	probeIdleLimit       = time.Second
)

// errProbesClosed is returned by probeListener.start after close.
var errProbesClosed = errors.New("probe listener: closed")

// probeRoutes are what the probe listener serves, by exact path.
type probeRoutes struct {
	readyz    http.Handler // the Host's Monitor
	startupz  http.Handler
	metrics   http.Handler
	lifecycle http.Handler
	prestop   http.Handler
	pprof     http.Handler // nil unless a profiling token is set (pprof.go)
}

// probeListener serves the probes on a port of their own, for processes without an
// HTTP server and for those whose server must not answer probes: /readyz (the Host's
// Monitor, so that it and every other transport give one verdict), /livez, /startupz,
// /metrics, /debug/lifecycle and prestop.Path. Each path is served under its one
// spelling only: a percent-escaped, doubled-slash, trailing-slash or dotted form of it
// is 404, neither decoded nor redirected. It runs stdlib net/http in one goroutine
// that it owns, with a connection cap of its own (probecap.go) and short limits on
// headers, reads and idle connections (the constants above). The Host starts it at bootstrap, before warmup, so it answers
// "unavailable" until Ready and "draining" through the whole drain, and closes it
// last.
type probeListener struct {
	addr         string
	handler      http.Handler
	writeTimeout time.Duration
	log          *zap.Logger
	conns        *probeConns // the cap (probecap.go)

	mu      sync.Mutex
	started bool
	closed  bool
	srv     *http.Server
	ln      net.Listener
	served  chan struct{} // closed when the serve goroutine has returned

	closeOnce sync.Once
	closeErr  error
}

// newProbeListener returns a listener for cfg (validated by New) ready to start. It
// binds nothing.
func newProbeListener(cfg health.ListenerConfig, routes probeRoutes, log *zap.Logger) *probeListener {
	mux := http.NewServeMux()
	mux.Handle("/readyz", routes.readyz)
	mux.Handle("/livez", health.Liveness())
	mux.Handle("/startupz", routes.startupz)
	mux.Handle("/metrics", routes.metrics)
	mux.Handle("/debug/lifecycle", routes.lifecycle)
	mux.Handle(prestop.Path, routes.prestop)
	if routes.pprof != nil {
		mux.Handle(pprofPath, routes.pprof)
		mux.Handle(pprofPath+"/", routes.pprof)
	}
	checkTimeout := cfg.CheckTimeout
	if checkTimeout <= 0 {
		checkTimeout = defaultCheckTimeout
	}
	return &probeListener{
		addr:    cmp.Or(cfg.Addr, defaultProbeAddr),
		handler: canonicalOnly(mux),
		// /metrics may take a while; readiness reads the checks' last results and
		// never waits on one (the margin of one CheckTimeout is kept for a Monitor
		// not started, which runs them per answer).
		writeTimeout: 30*time.Second + checkTimeout,
		log:          log,
		conns:        newProbeConns(transport.ProbeMaxConns()),
	}
}

// canonicalOnly answers 404 to a request whose path is not written the one way the
// listener's paths are: with a percent-escape ("/%70restop"), a doubled or trailing
// slash ("//prestop", "/prestop/"), a dot segment. http.ServeMux would decode the
// first and redirect the second to the path it names; here each path has exactly one
// spelling, so that a rule in front of the port (a proxy, a mesh policy) that names
// a path cannot be walked around by spelling it another way. A query string is left
// to the handler.
func canonicalOnly(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if r.URL.RawPath != "" || !strings.HasPrefix(p, "/") || (p != "/" && path.Clean(p) != p) {
			http.NotFound(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// start binds the address now and serves the probes in a goroutine until close. An
// address that cannot be bound is an error naming it, e.g. "probe listener: listen
// tcp 127.0.0.1:8079: bind: address already in use". start may be called once;
// after close it returns errProbesClosed.
func (l *probeListener) start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return errProbesClosed
	case l.started:
		return errors.New("probe listener: already started")
	}
	l.started = true
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return fmt.Errorf("probe listener: %w", err)
	}
	errLog, _ := zap.NewStdLogAt(l.log.Named("probe"), zapcore.WarnLevel)
	l.ln = ln
	ln = l.conns.listener(ln)
	l.srv = &http.Server{
		Handler:           l.handler,
		ReadHeaderTimeout: probeReadHeaderLimit,
		ReadTimeout:       probeReadLimit,
		WriteTimeout:      l.writeTimeout,
		IdleTimeout:       probeIdleLimit,
		MaxHeaderBytes:    probeMaxHeaderBytes,
		ConnState:         l.conns.state,
		ErrorLog:          errLog,
	}
	l.served = make(chan struct{})
	go func() {
		defer close(l.served)
		if err := l.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			l.log.Error("probe listener stopped serving", zap.Error(err))
		}
	}()
	l.log.Info("probe listener started", zap.Stringer("addr", ln.Addr()), zap.Int("max_conns", l.conns.max))
	return nil
}

// boundAddr returns the bound address (with the real port when Addr asked for port
// 0), or nil before start.
func (l *probeListener) boundAddr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln == nil {
		return nil
	}
	return l.ln.Addr()
}

// close stops the listener: first http.Server.Shutdown, which closes the listening
// socket and idle connections and waits for probes in progress to be answered; if ctx
// ends first, the remaining connections are closed hard and ctx's error is returned.
// Then it waits for the serve goroutine to return. It does not wait for checks that
// an answered probe abandoned at their timeout; those end on their own.
//
// close is idempotent: later and concurrent calls wait for the first and return its
// result. close before start makes start fail.
func (l *probeListener) close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		srv, served := l.srv, l.served
		l.mu.Unlock()
		if srv == nil {
			return
		}
		if err := srv.Shutdown(ctx); err != nil {
			l.closeErr = fmt.Errorf("probe listener: shutdown: %w", err)
			_ = srv.Close()
		}
		<-served
	})
	return l.closeErr
}
