package grpcentry

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/transport"
)

var _ entrypoint.DefaultsUser = (*Server)(nil)

// SetDefaults takes the Host's telemetry for what no option gave: its logger unless
// WithLogger, its registry for the metrics unless WithRegisterer, its tracer
// provider unless WithTracerProvider, its propagator unless WithPropagator, its
// error reporter (for handler panics) unless WithReporter. Taking the tracer
// provider, or the propagator of a traced Server, builds the grpc.Server again with
// otelgrpc, calling the register function given to New once more (a no-op provider
// is not taken: tracing costs every RPC its stats events). It returns a metrics
// registration that fails, or a register that panics this time (the Host refuses
// the entrypoint then), and does nothing once the Server is bound.
func (s *Server) SetDefaults(d entrypoint.Defaults) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.guard.Phase() != entrypoint.PhaseNew {
		return nil
	}
	t := s.own.given.Or(d)
	if t.Logger != nil {
		s.log = t.Logger.With(zap.String("entrypoint", s.cfg.Name))
	}
	s.reporter, s.prop = t.Reporter, t.Propagator
	tp := t.TracerProvider
	if s.own.given.TracerProvider == nil && tp != nil && isNoop(tp) {
		tp = nil
	}
	hostProp := s.own.given.Propagator == nil && d.Propagator != nil
	if tp != nil && (!s.traced || hostProp) {
		if err := s.rebuild(tp); err != nil {
			return err
		}
	}
	if s.metrics == nil && t.Registerer != nil {
		if err := s.useRegisterer(t.Registerer); err != nil {
			return fmt.Errorf("%s: metrics: %w", s.cfg.Name, err)
		}
	}
	return nil
}

// useRegisterer registers the metrics with reg.
func (s *Server) useRegisterer(reg prometheus.Registerer) error {
	shed, err := transport.NewShed(reg, s.cfg.Name, "grpc", s.gate.Limiter)
	if err != nil {
		return err
	}
	m, err := newMetrics(reg, s.cfg.Name, s.InFlight, s.capped)
	if err != nil {
		shed.Unregister()
		return err
	}
	s.metrics, s.adm.shed = m, &shed
	return nil
}

// rebuild replaces the grpc.Server, not yet served, by one that traces with tp.
func (s *Server) rebuild(tp trace.TracerProvider) error {
	gs, _, err := s.build(tp)
	if err != nil {
		return fmt.Errorf("%s: register: %w", s.cfg.Name, err)
	}
	healthpb.RegisterHealthServer(gs, s.health)
	s.grpc, s.traced = gs, true
	return nil
}

// isNoop tells the tracer providers that record nothing.
func isNoop(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
		return true
	}
	return false
}

// propagator is the propagator of the Server's tracing: WithPropagator's, the
// Host's, or W3C trace context and baggage.
func (s *Server) propagator() propagation.TextMapPropagator {
	if s.prop != nil {
		return s.prop
	}
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}
