package health

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/fault"
)

// DefaultProbeAddr is where the probe listener listens when ListenerConfig.Addr is empty.
const DefaultProbeAddr = ":8079"

// ListenerConfig is the probe listener's configuration (AppSpec.Probes). The zero value
// listens on :8079 with 2 s per check.
type ListenerConfig struct {
	Addr     string // host:port; "" means ":8079"
	Disabled bool   // no listener at all (the process serves probes itself)
	// CheckTimeout is each readiness check's own budget. Zero, the field left unset,
	// means DefaultCheckTimeout (2s); a value set below zero is refused with a
	// ConfigError naming CheckTimeout, as no check can answer within it.
	CheckTimeout time.Duration
}

// Validate returns a *fault.ConfigError naming each bad field: a negative CheckTimeout, an
// Addr that is not host:port with a numeric port. Fields are checked even when
// Disabled.
func (c ListenerConfig) Validate() error {
	var l fault.Problems
	c.validate(&l)
	return l.Err()
}

func (c ListenerConfig) validate(l *fault.Problems) {
	validateTimeout(l, c.CheckTimeout)
	if c.Addr == "" {
		return
	}
	_, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		l.Addf("Addr", "must be host:port, got %q: %v", c.Addr, err)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		l.Addf("Addr", "port must be a number from 0 to 65535, got %q", port)
	}
}

func (c ListenerConfig) addr() string {
	if c.Addr == "" {
		return DefaultProbeAddr
	}
	return c.Addr
}

// ListenerOptions are the probe listener's collaborators. They are what the Host
// wires in (its readiness checks, its /metrics and /debug/lifecycle handlers, its
// logger), not configuration: a user configures the listener with ListenerConfig
// (AppSpec.Probes), and only the Host calls NewListener, which is why they stay one
// struct rather than options.
type ListenerOptions struct {
	Checks    map[string]Check // readiness dependencies, as in ReadinessConfig
	Metrics   http.Handler     // served at /metrics when not nil
	Lifecycle http.Handler     // served at /debug/lifecycle when not nil
	Logger    *zap.Logger      // nil logs nothing
	// Registerer, when set, receives servicewright_readiness_check_failing{check,gates}
	// (see ReadinessConfig.Registerer).
	Registerer prometheus.Registerer
	// Routes are extra handlers served on the probe port, keyed by exact path (for
	// example the Host's "/prestop", the target of a Kubernetes preStop httpGet). A
	// path must begin with "/" and must not be one of the listener's own — /readyz,
	// /livez, /startupz, /metrics, /debug/lifecycle — nor "/" or a subtree ("/x/")
	// that would answer for paths it does not name; a nil handler is refused too.
	Routes map[string]http.Handler
}

// builtinPaths are the paths a probe listener serves itself; Routes may not shadow them.
func builtinPaths() []string {
	return []string{"/readyz", "/livez", "/startupz", "/metrics", "/debug/lifecycle"}
}

func validateRoutes(l *fault.Problems, routes map[string]http.Handler) {
	for _, path := range slices.Sorted(maps.Keys(routes)) {
		h := routes[path]
		field := fmt.Sprintf("Routes[%q]", path)
		switch {
		case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t{}"):
			l.Addf(field, "must be a path beginning with \"/\", without a method or wildcards")
		case strings.HasSuffix(path, "/"):
			l.Addf(field, "must name one path exactly, not a subtree ending in \"/\"")
		case slices.Contains(builtinPaths(), path):
			l.Addf(field, "shadows the probe listener's own %s", path)
		case h == nil:
			l.Addf(field, "handler must not be nil")
		case !registers(path):
			l.Addf(field, "is not a path http.ServeMux accepts")
		}
	}
}

// registers reports whether http.ServeMux accepts path as a pattern (it panics on one
// it does not).
func registers(path string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	http.NewServeMux().Handle(path, http.NotFoundHandler())
	return true
}

// Listener serves the probes on a port of its own, for processes without an HTTP
// server and for those whose server must not answer probes: /readyz (NewReadiness),
// /livez (Liveness), /startupz (Startup), /metrics and /debug/lifecycle when given,
// and the extra Routes of ListenerOptions.
// Each path is served under its one spelling only: a percent-escaped, doubled-slash,
// trailing-slash or dotted form of it is 404, neither decoded nor redirected.
// It runs stdlib net/http in one goroutine that it owns. The Host starts it at
// bootstrap, before warmup, so it answers "unavailable" until Ready and "draining"
// through the whole drain, and closes it last.
type Listener struct {
	cfg     ListenerConfig
	eval    *evaluator // /readyz's
	handler http.Handler
	log     *zap.Logger

	mu      sync.Mutex
	started bool
	closed  bool
	srv     *http.Server
	ln      net.Listener
	served  chan struct{} // closed when the serve goroutine has returned

	closeOnce sync.Once
	closeErr  error
}

// ErrListenerClosed is returned by Start after Close.
var ErrListenerClosed = errors.New("probe listener: closed")

// NewListener validates cfg and opts and returns a Listener ready to Start. It binds
// nothing. Problems come back as one *fault.ConfigError naming each field ("Addr",
// "CheckTimeout", `Checks["redis"]`, `Routes["/readyz"]`, "Source").
func NewListener(cfg ListenerConfig, src Source, opts ListenerOptions) (*Listener, error) {
	var l fault.Problems
	cfg.validate(&l)
	validateSource(&l, src)
	validateChecks(&l, opts.Checks)
	validateRoutes(&l, opts.Routes)
	if err := l.Err(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	failing, err := newFailingGauge(opts.Registerer)
	if err != nil {
		return nil, err
	}
	e := newEvaluator(src, opts.Checks, cfg.CheckTimeout, log)
	e.failing = failing
	mux := http.NewServeMux()
	mux.Handle("/readyz", &readiness{e})
	mux.Handle("/livez", Liveness())
	mux.Handle("/startupz", newStartup(src, log))
	if opts.Metrics != nil {
		mux.Handle("/metrics", opts.Metrics)
	}
	if opts.Lifecycle != nil {
		mux.Handle("/debug/lifecycle", opts.Lifecycle)
	}
	for path, h := range opts.Routes {
		mux.Handle(path, h)
	}
	return &Listener{cfg: cfg, eval: e, handler: canonicalOnly(mux), log: log}, nil
}

// AddCheck adds the check c under name to those /readyz runs, as if it had been in
// ListenerOptions.Checks; it takes effect at the next probe, Start or no Start. It
// refuses what Monitor.AddCheck refuses, with the same *fault.ConfigError.
func (l *Listener) AddCheck(name string, c Check) error { return l.eval.add(name, c) }

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

// Start binds the configured address now and serves the probes in a goroutine until
// Close. An address that cannot be bound is an error naming it, e.g. "probe listener:
// listen tcp 127.0.0.1:8079: bind: address already in use". A disabled Listener binds
// nothing and returns nil. Start may be called once; after Close it returns
// ErrListenerClosed.
func (l *Listener) Start() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrListenerClosed
	case l.started:
		return errors.New("probe listener: already started")
	}
	l.started = true
	if l.cfg.Disabled {
		return nil
	}
	ln, err := net.Listen("tcp", l.cfg.addr())
	if err != nil {
		return fmt.Errorf("probe listener: %w", err)
	}
	errLog, _ := zap.NewStdLogAt(l.log.Named("probe"), zapcore.WarnLevel)
	l.ln = ln
	l.srv = &http.Server{
		Handler:           l.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		// A readiness answer takes up to one CheckTimeout; /metrics may take longer.
		WriteTimeout:   30*time.Second + l.cfg.CheckTimeout,
		IdleTimeout:    60 * time.Second,
		MaxHeaderBytes: 16 << 10,
		ErrorLog:       errLog,
	}
	l.served = make(chan struct{})
	go func() {
		defer close(l.served)
		if err := l.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			l.log.Error("probe listener stopped serving", zap.Error(err))
		}
	}()
	l.log.Info("probe listener started", zap.Stringer("addr", ln.Addr()))
	return nil
}

// Addr returns the bound address (with the real port when Addr asked for port 0), or
// nil before Start and when disabled.
func (l *Listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln == nil {
		return nil
	}
	return l.ln.Addr()
}

// Close stops the listener: first http.Server.Shutdown, which closes the listening
// socket and idle connections and waits for probes in progress to be answered; if ctx
// ends first, the remaining connections are closed hard and ctx's error is returned.
// Then it waits for the serve goroutine to return. It does not wait for checks that
// an answered probe abandoned at their timeout; those end on their own.
//
// Close is idempotent: later and concurrent calls wait for the first and return its
// result. Close before Start makes Start fail.
func (l *Listener) Close(ctx context.Context) error {
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
