package grpcentry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/transport"
)

var _ entrypoint.Entrypoint = (*Server)(nil)

var _ interface {
	entrypoint.InFlighter
	entrypoint.DrainReporter
} = (*Server)(nil)

// Server is a gRPC server run as an entrypoint: Bind listens, Serve serves, Drain
// refuses new RPCs and lets the admitted ones finish while spreading the close of
// streams, and Stop cuts whatever is left. Make one with New.
type Server struct {
	cfg      Config
	grpc     *grpc.Server
	log      *zap.Logger
	metrics  *metrics // nil without a registerer
	own      options  // what the options gave; SetDefaults fills in the rest
	tlsCfg   *tls.Config
	register func(*grpc.Server)
	trace    tracing // the server span of each admitted RPC (trace.go); zero: none
	health   *healthServer
	reporter fault.Reporter  // nil: panics are only logged
	monitor  *health.Monitor // WithHealth's, or the Host's (UseMonitor); nil without either

	gate    entrypoint.Gate
	adm     admissionState // admission.go
	streams streamSet
	methods methodSet // the registered methods, to count the others as unknown (unknown.go)
	panics  atomic.Uint64
	refused atomic.Uint64
	abuses  atomic.Uint64 // connections cut for resetting too many streams
	resets  *resetGuard   // the credentials every connection is wrapped in (resets.go, leave.go)

	base        entrypoint.Base // the name and the phase, under its lock with the fields below
	ln          net.Listener
	capped      *transport.ConnCap // MaxConnections, on ln from Bind
	serving     *transport.Serving // the goroutine of grpc.Server.Serve
	unsubscribe func()             // ends the health subscription; nil when none
	graceful    chan struct{}      // closed when GracefulStop has returned; nil before Drain
	stopped     chan struct{}      // closed when grpc.Server.Stop has returned; nil before Stop
	report      string
}

// New checks cfg and the options, builds the grpc.Server with the Server's
// interceptors and safe defaults, calls register to add the application's services,
// and adds the grpc.health.v1 service. It returns a *fault.ConfigError listing every
// problem, with its field, when cfg or an option is invalid (the certificate files
// are read here), or when register is nil or panics, and starts nothing: no socket
// is opened until Bind.
//
// register must not register grpc.health.v1.Health: the Server serves it, tied to
// readiness (see WithHealth). grpc-go exits the process on a service registered
// twice; that is not caught. Server reflection, if wanted, is registered by
// register (reflection.Register).
func New(cfg Config, register func(*grpc.Server), opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var l fault.Problems
	transport.Addr(&l, o.Listener != nil, &cfg.Addr, defaultAddr)
	cfg = cfg.resolve(&l)
	tlsCfg := transport.LoadTLS(&l, cfg.CertFile, cfg.KeyFile)
	if register == nil {
		l.Addf("register", "must not be nil")
	}
	l.Merge("", o.Problems.Err())
	if err := l.Err(); err != nil {
		return nil, err
	}

	s := &Server{cfg: cfg, capped: transport.NewConnCap(cfg.MaxConnections, nil), serving: transport.NewServing(cfg.Name, "grpc.Server", grpc.ErrServerStopped), own: o, tlsCfg: tlsCfg, register: register, ln: o.Listener, monitor: o.monitor, log: zap.NewNop(),
		trace: newTracing(o.Given.TracerProvider, o.Given.Propagator), reporter: o.Given.Reporter}
	s.useAdmission(o.admission, &l)
	if o.Given.Logger != nil {
		s.log = o.Given.Logger.With(zap.String("entrypoint", cfg.Name))
	}
	gs, names, err := s.build()
	if err != nil {
		l.Addf("register", "%v", err)
		return nil, l.Err()
	}
	if o.servicesSet {
		checkServices(&l, o.services, names)
		names = o.services
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	s.health = newHealthServer(names)
	healthpb.RegisterHealthServer(gs, s.health)
	s.grpc = gs

	if err := s.base.Init(cfg.Name, o.Given, s.useTelemetry); err != nil {
		if transport.AlreadyRegistered(err) {
			l.Addf("WithTelemetry", "metrics for entrypoint %q are already registered: %v", cfg.Name, err)
		} else {
			l.Addf("WithTelemetry", "%v", err)
		}
		return nil, l.Err()
	}
	return s, nil
}

// build makes a grpc.Server with the Server's options — limits, keepalive, TLS, its
// interceptors outermost (which trace, trace.go), then WithServerOptions — and calls
// register on it. It returns the server and the services register added (sorted), or
// register's panic. The health service is added by the caller. No stats handler is
// installed: one would cost every RPC grpc-go's stats events.
func (s *Server) build() (*grpc.Server, []string, error) {
	cfg := s.cfg
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.MaxRecvMsgSize),
		grpc.MaxSendMsgSize(cfg.MaxSendMsgSize),
		grpc.MaxConcurrentStreams(uint32(cfg.MaxConcurrentStreams)),
		grpc.MaxHeaderListSize(uint32(cfg.MaxMetadataBytes)),
		grpc.ConnectionTimeout(cfg.ConnectionTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:                  cfg.KeepaliveTime,
			Timeout:               cfg.KeepaliveTimeout,
			MaxConnectionIdle:     cfg.MaxConnectionIdle,
			MaxConnectionAge:      cfg.MaxConnectionAge,
			MaxConnectionAgeGrace: cfg.MaxConnectionAgeGrace,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: cfg.KeepaliveMinTime, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(s.unary),
		grpc.ChainStreamInterceptor(s.stream),
		grpc.UnknownServiceHandler(unknownCall), // through s.stream, counted as unknown
	}
	guard := &resetGuard{burst: float64(cfg.MaxStreamResets), rate: float64(cfg.StreamResetRate), onAbuse: s.resetAbuse}
	if s.tlsCfg != nil {
		guard.inner = credentials.NewTLS(s.tlsCfg)
	}
	s.resets = guard
	opts = append(opts, grpc.Creds(guard))
	gs := grpc.NewServer(append(opts, s.own.serverOpts...)...)
	err := safe.Call("register", func() error { s.register(gs); return nil })
	if pe, ok := errors.AsType[*fault.PanicError](err); ok {
		return nil, nil, fmt.Errorf("%v", pe.Value)
	}
	return gs, registered(gs), nil
}

// registered lists the services register added, sorted.
func registered(gs *grpc.Server) []string {
	var names []string
	for name := range gs.GetServiceInfo() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func checkServices(l *fault.Problems, want, have []string) {
	if len(want) == 0 {
		l.Addf("WithHealthServices", "must name at least one service")
	}
	seen := map[string]bool{}
	for _, n := range want {
		switch {
		case n == "":
			l.Addf("WithHealthServices", "a service name must not be empty (the whole server, \"\", is always answered for)")
		case seen[n]:
			l.Addf("WithHealthServices", "service %q is named twice", n)
		case !slices.Contains(have, n):
			l.Addf("WithHealthServices", "service %q is not registered (registered: %v)", n, have)
		}
		seen[n] = true
	}
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

// GRPC returns the underlying grpc.Server, for what the options do not cover
// (GetServiceInfo, channelz). Do not call its Serve, Stop or GracefulStop.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// InFlight reports the RPCs whose handler runs, health checks excepted.
func (s *Server) InFlight() int { return s.gate.InFlight() }

// Stats are a Server's counters since it was made.
type Stats struct {
	Panics          uint64 // handlers that panicked, answered INTERNAL
	RefusedDraining uint64 // RPCs refused with UNAVAILABLE because the server was draining
	ResetAbuses     uint64 // connections closed for resetting too many streams
	ConnectionsHeld uint64 // connections left waiting in the backlog at MaxConnections
}

// Stats returns the Server's counters, with or without a metrics registry.
func (s *Server) Stats() Stats {
	return Stats{Panics: s.panics.Load(), RefusedDraining: s.refused.Load(),
		ResetAbuses: s.abuses.Load(), ConnectionsHeld: s.capped.Stats().Paused}
}

// Connections reports the connections open now (0 before Bind).
func (s *Server) Connections() int {
	return s.capped.Stats().Open
}

// DrainReport tells what the last Drain did, for the shutdown report, beginning
// with the connections sent a GOAWAY when readiness was withdrawn (moved_off=N,
// see Serve).
func (s *Server) DrainReport() string {
	s.base.Lock()
	defer s.base.Unlock()
	return strings.TrimSpace(s.report + " " + s.capped.Report())
}

// Bind opens the listening socket on Config.Addr (or takes the listener given with
// WithListener) but serves nothing yet: connections wait in the socket's backlog
// until Serve. A failure to listen is returned naming the entrypoint, and leaves the
// Server unbound. Calling it twice is an error wrapping entrypoint.ErrOutOfTurn.
func (s *Server) Bind(ctx context.Context) error {
	s.base.Lock()
	defer s.base.Unlock()
	ln, err := transport.Bind(ctx, &s.base, s.ln, s.cfg.Addr, s.cfg.Name)
	if err != nil {
		return err
	}
	s.capped.SetLogger(s.log)
	s.ln = s.capped.Listener(ln)
	return nil
}

// Serve starts grpc.Server.Serve on the bound listener, in a goroutine the Server
// owns, and follows readiness in the health service (see WithHealth). It returns nil
// once stop is closed, with the listener still open and RPCs still served normally;
// the health service answers NOT_SERVING from then on.
//
// From the moment readiness is withdrawn — stop closing, or before it the Monitor
// saying draining (Host.BeginDraining, PreStop) — every connection open is sent an
// HTTP/2 GOAWAY (NO_ERROR, naming no stream as refused), so that a client opens its
// next RPCs on a new connection, which its balancer sends to a ready replica, while
// the RPCs it has here finish and new ones sent before it read the frame are still
// served. A connection accepted later gets its GOAWAY from Drain's GracefulStop:
// told to leave at once, a client would reconnect here in a loop while its balancer
// has not noticed. The GOAWAY is written between two
// of the server's frames; with a grpc.Creds of WithServerOptions, which replaces the
// Server's connection wrapper, it is not sent, and the clients leave at Drain's
// GracefulStop. DrainReport counts the connections moved off (moved_off).
//
// If grpc.Server.Serve fails before stop is closed, Serve returns its error. The
// grpc.Server has closed the listener then, and a Server cannot serve again: a
// second Serve returns an error wrapping entrypoint.ErrOutOfTurn that says so, and
// the Host leaves it failed even on a NonEssential registration. If ctx
// is done before stop, the Host has given up on the entrypoint: Serve cuts everything
// as Stop does, waits for grpc.Server.Serve to return at most hooks.AbandonAfter and
// returns ctx.Err() (joined with an error wrapping fault.ErrAbandoned when it did not
// return in time).
//
// Serve returns an error wrapping entrypoint.ErrOutOfTurn if called before Bind or
// twice; nil at once, serving nothing, if Drain or Stop came first.
func (s *Server) Serve(ctx context.Context, stop <-chan struct{}) error {
	s.base.Lock()
	start, err := s.base.Serve()
	if !start {
		s.base.Unlock()
		return s.serving.Refused(err)
	}
	if s.monitor != nil {
		s.unsubscribe = s.monitor.Subscribe(func(r health.Answer) {
			s.health.set(r.Serving())
			if r.Status == health.AnswerDraining {
				s.moveOff()
			}
		})
	} else {
		s.health.set(true)
	}
	ln, gs := s.ln, s.grpc
	s.serving.Start(func() error { return gs.Serve(ln) })
	s.base.Unlock()

	err = s.serving.Until(ctx, stop, func() { s.cutAll() })
	select {
	case <-stop:
		s.health.withdraw(false)
		s.moveOff()
	default:
	}
	return err
}
