package httpentry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/internal/transport"
)

var _ interface {
	entrypoint.Entrypoint
	entrypoint.InFlighter
	entrypoint.DefaultsUser
	entrypoint.DrainReporter
	health.MonitorUser
} = (*Server)(nil)

// Server is an HTTP server run as an entrypoint: Bind listens, Serve serves, Drain
// refuses new requests and lets the admitted ones finish while spreading the close
// of streams, and Stop cuts whatever is left. Make one with New.
type Server struct {
	cfg        Config
	srv        *http.Server
	handler    http.Handler // the user's handler
	next       http.Handler // the user's handler, called directly (handler.go)
	trace      tracing      // the server span of each request (trace.go); zero: none
	log        *zap.Logger
	metrics    *metrics             // nil without a registerer
	tracing    trace.TracerProvider // nil without a tracer provider
	prop       propagation.TextMapPropagator
	reporter   fault.Reporter // nil: panics are only logged
	isStream   func(*http.Request) bool
	classes    *classes // nil: every request not a stream is Ordinary (admission.go)
	retryAfter string
	requestID  bool       // WithRequestID
	access     *accessLog // nil: no access log

	gate      entrypoint.Gate
	streams   streamSet
	conns     *connSet
	heads     *headLimits // MaxHeaderFields (headlimit.go)
	responses sync.Pool   // of *response, reused across plain requests
	panics    atomic.Uint64
	refused   atomic.Uint64
	monitor   *health.Monitor // the Host's readiness, followed from Serve (leave.go)
	leaving   atomic.Bool     // readiness is withdrawn: every response closes its connection
	movedOff  atomic.Uint64   // connections told to close by leave

	base      entrypoint.Base // the name and the phase, under its lock with the fields below
	ln        net.Listener
	serveDone chan struct{} // closed when the http.Server's Serve has returned (serving.Done)
	draining  chan struct{} // closed once Drain has closed the Gate

	capped  *transport.ConnCap // Config.MaxConns, on the listener Serve serves (report.go)
	serving *transport.Serving // the goroutine of http.Server.Serve
}

// New checks cfg and the options and returns a Server that will serve handler. It
// returns a *fault.ConfigError listing every problem, with its field, when cfg or an
// option is invalid (the certificate files are read and checked here), and starts
// nothing: no socket is opened until Bind.
//
// With a Registerer in WithTelemetry, the metrics are registered here; nothing is registered when
// New fails.
func New(cfg Config, handler http.Handler, opts ...Option) (*Server, error) {
	o := options{isStream: IsStreamRequest}
	for _, opt := range opts {
		opt(&o)
	}
	var l fault.Problems
	transport.Addr(&l, o.Listener != nil, &cfg.Addr, defaultAddr)
	cfg = cfg.resolve(&l)
	tlsCfg := transport.LoadTLS(&l, cfg.CertFile, cfg.KeyFile)
	if handler == nil {
		l.Addf("handler", "must not be nil")
	}
	l.Merge("", o.Problems.Err())
	s := &Server{
		cfg:        cfg,
		responses:  sync.Pool{New: func() any { return new(response) }},
		handler:    handler,
		prop:       o.Given.Propagator,
		reporter:   o.Given.Reporter,
		isStream:   streamMatcher(o.isStream, o.streams, &l),
		retryAfter: retryAfterHeader(cfg.RetryAfter),
		requestID:  o.requestID,
		ln:         o.Listener,
		draining:   make(chan struct{}),
		capped:     transport.NewConnCap(cfg.MaxConns, nil),
		heads:      newHeadLimits(cfg.MaxHeaderFields),
		serving:    transport.NewServing(cfg.Name, "http.Server", http.ErrServerClosed),
	}
	s.useAdmission(o.admission, &l)
	s.next = chain(handler, o.middleware, &l) // the handler, inside the middleware (middleware.go)
	s.access = newAccessLog(o.access, &l)
	if cs, err := newConnSet(cfg.Name, s.capped.Listener); err != nil {
		l.Merge("", err)
	} else {
		s.conns = cs
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ConnState:         s.conns.track,
		ConnContext:       connContext,
	}
	if err := s.base.Init(cfg.Name, o.Given, s.useTelemetry); err != nil {
		l.Addf("WithTelemetry", "%v", err)
		return nil, l.Err()
	}
	return s, nil
}

// SetDefaults takes the Host's telemetry for each field WithTelemetry left nil: the
// logger, the registry for the metrics, the tracer provider, the propagator and
// the error reporter (for handler panics). It returns a metrics
// registration that fails (the Host refuses the entrypoint then), and does nothing
// once the Server is bound.
func (s *Server) SetDefaults(d entrypoint.Telemetry) error { return s.base.SetDefaults(d) }

// useTelemetry takes t, the options' telemetry at New and that merged with the
// Host's at SetDefaults: the logger, the reporter, the propagator, the tracer
// provider and, once, the metrics registry.
func (s *Server) useTelemetry(t entrypoint.Telemetry) error {
	s.useLogger(t.Logger)
	s.reporter, s.prop = t.Reporter, t.Propagator
	s.useTracerProvider(t.TracerProvider) // again with the Host's propagator, when it is the option's
	if s.metrics == nil && t.Registerer != nil {
		return s.useRegisterer(t.Registerer)
	}
	return nil
}

// useLogger sends the Server's logs, and net/http's own complaints (TLS handshakes,
// malformed requests), to l; a nil l discards them.
func (s *Server) useLogger(l *zap.Logger) {
	if l == nil {
		l = zap.NewNop()
	}
	s.log = l.With(zap.String("entrypoint", s.cfg.Name))
	s.capped.SetLogger(s.log)
	if stdLog, err := zap.NewStdLogAt(s.log, zap.WarnLevel); err == nil {
		s.srv.ErrorLog = stdLog
	}
}

// useTracerProvider makes the Server start a span per request with tp and its
// propagator (W3C trace context and baggage when it has none); a nil tp does
// nothing, and a no-op one starts no span.
func (s *Server) useTracerProvider(tp trace.TracerProvider) {
	if tp == nil {
		return
	}
	s.tracing = tp
	s.trace = tracing{transport.NewTracing(tp, s.prop, tracerName)}
}

// useRegisterer registers the metrics with reg. A failure leaves nothing registered.
func (s *Server) useRegisterer(reg prometheus.Registerer) error {
	m, err := newMetrics(reg, s.cfg.Name, s.InFlight, s.gate.Limiter, s.capped)
	if err != nil {
		if transport.AlreadyRegistered(err) {
			return fmt.Errorf("metrics for entrypoint %q are already registered: %w", s.cfg.Name, err)
		}
		return err
	}
	s.metrics = m
	return nil
}

// Name returns Config.Name.
func (s *Server) Name() string { return s.base.Name() }

// Addr returns the address the Server listens on, or nil before Bind. With Addr
// ":0", it tells which port was picked.
func (s *Server) Addr() net.Addr {
	s.base.Lock()
	defer s.base.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// InFlight reports the requests whose handler is running plus the hijacked
// connections still open.
func (s *Server) InFlight() int { return s.gate.InFlight() }

// Stats are a Server's counters since it was made.
type Stats struct {
	Panics          uint64 // handlers that panicked, http.ErrAbortHandler excluded
	RefusedDraining uint64 // requests refused with 503 because the server was draining
	MovedOff        uint64 // connections told to close once readiness was withdrawn
	// RefusedHeaderFields counts the requests refused with 431 for carrying more
	// than MaxHeaderFields header fields, RefusedFraming those refused with 400 for
	// carrying both Content-Length and Transfer-Encoding; each connection was closed.
	RefusedHeaderFields uint64
	RefusedFraming      uint64
}

// Stats returns the Server's counters, with or without a registerer.
func (s *Server) Stats() Stats {
	return Stats{Panics: s.panics.Load(), RefusedDraining: s.refused.Load(), MovedOff: s.movedOff.Load(),
		RefusedHeaderFields: s.heads.refusedFields.Load(), RefusedFraming: s.heads.refusedFraming.Load()}
}

// Bind opens the listening socket on Config.Addr (or takes the listener given with
// WithListener) but serves nothing yet: connections wait in the socket's backlog
// until Serve. A failure to listen is returned naming the address, e.g.
// "http: listen tcp 127.0.0.1:8080: bind: address already in use", and leaves the
// Server unbound. Bind honours ctx while it listens. Calling it twice is an error.
func (s *Server) Bind(ctx context.Context) error {
	s.base.Lock()
	defer s.base.Unlock()
	ln, err := transport.Bind(ctx, &s.base, s.ln, s.cfg.Addr, s.cfg.Name)
	if err != nil {
		return err
	}
	s.ln = ln
	return nil
}

// Serve starts the http.Server on the bound listener, in a goroutine the Server owns,
// and returns nil once stop is closed, with the listener still open and requests
// still served normally: the Host withdraws readiness and waits out the drain delay
// before it calls Drain. Requests' contexts carry ctx's values but not its
// cancellation.
//
// From the moment readiness is withdrawn — stop closing, or before it the Monitor
// of UseMonitor saying draining (Host.BeginDraining, PreStop) — the Server moves
// its clients off while it still serves: every response carries Connection: close,
// so that an HTTP/1.1 connection closes after its answer and an HTTP/2 one is sent
// a GOAWAY, and a keep-alive client opens its next connection through its load
// balancer, to a replica still ready. Connections that stay idle through the drain
// delay are left open until Drain closes them: closing an idle connection races
// the client's next request on it, and the longer it stayed idle the less likely
// that request is. DrainReport counts the connections moved off (moved_off).
//
// If the http.Server fails before stop is closed (the listener breaks), Serve returns
// its error. The http.Server has closed the listener then, and a Server cannot serve
// again: a second Serve returns an error wrapping entrypoint.ErrOutOfTurn that says
// so, and the Host leaves it failed even on a NonEssential registration. If ctx is done before stop, the Host has given up on the entrypoint:
// Serve closes everything as Stop does, waits for the http.Server to return at most
// hooks.AbandonAfter and returns ctx.Err() (joined with an error wrapping
// fault.ErrAbandoned when it did not return in time).
//
// Serve returns an error if called before Bind or twice. It returns nil at once,
// serving nothing, if Drain or Stop was called first.
func (s *Server) Serve(ctx context.Context, stop <-chan struct{}) error {
	s.base.Lock()
	if start, err := s.base.Serve(); !start {
		s.base.Unlock()
		return s.serving.Refused(err)
	}
	base := context.WithoutCancel(ctx)
	s.srv.BaseContext = func(net.Listener) context.Context { return base }
	ln := s.ln
	s.serveDone = s.serving.Start(func() error { return s.serve(ln) })
	s.base.Unlock()
	unfollow := s.follow()
	err := s.serving.Until(ctx, stop, s.cutAll)
	unfollow()
	select {
	case <-stop:
		s.moveOff() // readiness was withdrawn with the stop, if not before
	default:
	}
	return err
}

// serve is what the serving goroutine runs.
func (s *Server) serve(ln net.Listener) error {
	ln = s.conns.t.Listener(ln)     // busy/idle per connection, the cap, and the backlog answered at Drain
	defer s.conns.t.CloseListener() // when Serve returned mid-backlog
	ln = s.countPipelined(ln)       // so that Drain counts the pipelined requests it leaves unanswered
	ln = s.limitHeads(ln)           // MaxHeaderFields, and no Content-Length with Transfer-Encoding
	var err error
	if s.srv.TLSConfig != nil {
		err = s.srv.ServeTLS(ln, "", "")
	} else {
		err = s.srv.Serve(ln)
	}
	// Drain closes the listener once the Gate is closed: that ends Serve as
	// http.Server.Shutdown would.
	if errors.Is(err, net.ErrClosed) && s.gate.Closed() {
		return http.ErrServerClosed
	}
	return err
}

// takeServeErr returns the http.Server's failure once, so that Serve and Drain do
// not both report it.
func (s *Server) takeServeErr() error { return s.serving.TakeErr() }
