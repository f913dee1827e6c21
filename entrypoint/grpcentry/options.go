package grpcentry

import (
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

// Option changes how New builds a Server.
type Option func(*options)

type options struct {
	listener    net.Listener
	given       entrypoint.Telemetry // the telemetry options; SetDefaults takes the Host's for the rest
	monitor     *health.Monitor
	services    []string
	servicesSet bool
	serverOpts  []grpc.ServerOption
	admission   admissionOptions // admission.go
	problems    fault.Problems
}

// WithListener makes Bind use l instead of listening on Config.Addr, which must then
// be empty. The Server takes ownership of l: Drain or Stop closes it.
func WithListener(l net.Listener) Option {
	return func(o *options) {
		if l == nil {
			o.problems.Addf("WithListener", "listener must not be nil")
		}
		o.listener = l
	}
}

// WithLogger sets the logger for handler panics. Without it the Server takes the
// Host's (SetDefaults), or discards them. A nil logger is ignored.
func WithLogger(l *zap.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.given.Logger = l
		}
	}
}

// WithRegisterer registers the Server's RED metrics with reg, each with a constant
// label entrypoint=Config.Name so that two servers can share a registry:
//
//	servicewright_grpc_requests_total{method,code}         counter
//	servicewright_grpc_request_duration_seconds{method}    histogram
//	servicewright_grpc_in_flight                           gauge
//	servicewright_grpc_refused_draining_total              counter
//	servicewright_grpc_panics_total                        counter
//	servicewright_grpc_reset_abuse_closed_total            counter
//	servicewright_grpc_connections_open                    gauge
//	servicewright_grpc_connections_max                     gauge
//	servicewright_grpc_accept_paused_total                 counter
//	servicewright_grpc_accept_paused_seconds_total         counter
//
// method is the RPC's full name ("/orders.v1.Orders/GetOrder"), code its status
// code's name ("OK", "UNAVAILABLE"). requests_total and the histogram count admitted
// RPCs when their handler returns; a refused RPC is counted only in
// refused_draining_total; the health service is not counted. reset_abuse_closed_total
// counts the connections closed for resetting too many streams (Config.MaxStreamResets),
// connections_open the connections open, and accept_paused_total and
// accept_paused_seconds_total how often and how long the listener stopped accepting at
// MaxConnections (new connections waiting in the backlog), the same connection cap
// and figures as httpentry's. A registration that
// fails (a name already taken) makes New fail, and nothing is left registered. A nil
// reg is ignored. Without it the Server registers with the Host's registry
// (SetDefaults), if any.
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(o *options) {
		if reg != nil {
			o.given.Registerer = reg
		}
	}
}

// WithTracerProvider makes the Server start a server span per admitted RPC with tp,
// continuing the trace of the call's metadata (W3C trace context and baggage unless
// WithPropagator says otherwise), named "package.Service/Method" and ended once the
// status — a panic's INTERNAL included — is known. The span carries the RPC semantic
// conventions' rpc.system.name, rpc.method and rpc.response.status_code, and an error
// status for UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE,
// DATA_LOSS or a panic (whose type only is recorded, never its text). The health
// service is not traced, and the global OpenTelemetry provider and propagator are
// not used. Without it the Server uses the tracer provider the Host hands it
// (SetDefaults), if any; with neither, or with a no-op provider, no span is made and
// tracing costs nothing. A nil tp is ignored.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) {
		if tp != nil {
			o.given.TracerProvider = tp
		}
	}
}

// WithHealth ties the grpc.health.v1 service to m: it answers SERVING only while m's
// verdict is ok (the Host is ready and every check passes) and NOT_SERVING from the
// moment readiness is withdrawn, and while a check fails. Without it the Server
// follows the Monitor of the Host it is registered with (UseMonitor), the same
// verdicts over the Host's readiness and checks; outside a Host the health service
// answers SERVING from Serve until the stop, NOT_SERVING from then on.
// A nil m is a configuration error.
func WithHealth(m *health.Monitor) Option {
	return func(o *options) {
		if m == nil {
			o.problems.Addf("WithHealth", "monitor must not be nil")
		}
		o.monitor = m
	}
}

// WithHealthServices names the services the health service answers for, beside the
// whole server (""), which it always answers for. By default it answers for every
// service the register function registered. An empty list, an empty name or a
// repeated one is a configuration error; so is a name that was not registered.
func WithHealthServices(names ...string) Option {
	return func(o *options) {
		o.servicesSet = true
		o.services = append(o.services[:0], names...)
	}
}

// WithServerOptions passes opts to grpc.NewServer after the Server's own, so that a
// limit given here wins: codecs, credentials, extra interceptors. Interceptors added
// with grpc.ChainUnaryInterceptor or grpc.ChainStreamInterceptor run inside the
// Server's gate and panic recovery; one set with grpc.UnaryInterceptor or
// grpc.StreamInterceptor runs outside them, before the gate. Do not use it to undo the
// message or keepalive limits without a reason. grpc.Creds replaces the credentials
// that carry the stream-reset guard (see Config.MaxStreamResets): give TLS with
// Config.CertFile and KeyFile to keep it.
func WithServerOptions(opts ...grpc.ServerOption) Option {
	return func(o *options) {
		o.serverOpts = append(o.serverOpts, opts...)
	}
}
