package grpcentry

import (
	"net"

	"google.golang.org/grpc"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/internal/transport"
)

// Option changes how New builds a Server.
type Option func(*options)

type options struct {
	transport.Options // WithListener, WithTelemetry, and the problems of every option
	monitor           *health.Monitor
	services          []string
	servicesSet       bool
	serverOpts        []grpc.ServerOption
	admission         admissionOptions // admission.go
}

// WithListener makes Bind use l instead of listening on Config.Addr, which must then
// be empty. The Server takes ownership of l: Drain or Stop closes it.
func WithListener(l net.Listener) Option {
	return func(o *options) { o.UseListener(l) }
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
			o.Problems.Addf("WithHealth", "monitor must not be nil")
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
