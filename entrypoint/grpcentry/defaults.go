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
// otelgrpc, calling the register function given to New once more (a no-op provider is not taken: tracing costs every RPC its stats events). A
// registration that fails, or a register that panics this time, is reported by
// Bind. It does nothing once the Server is bound.
func (s *Server) SetDefaults(d entrypoint.Defaults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.guard.Phase() != entrypoint.PhaseNew {
		return
	}
	if s.own.log == nil && d.Logger != nil {
		s.log = d.Logger.With(zap.String("entrypoint", s.cfg.Name))
	}
	if s.own.reporter == nil && d.Reporter != nil {
		s.reporter = d.Reporter
	}
	if s.own.prop == nil && d.Propagator != nil {
		s.prop = d.Propagator
		if s.own.tracer != nil && s.regErr == nil {
			s.rebuild(s.own.tracer) // again, with the propagator
		}
	}
	if s.own.tracer == nil && d.TracerProvider != nil && !isNoop(d.TracerProvider) && !s.traced {
		s.rebuild(d.TracerProvider)
	}
	if s.own.reg == nil && d.Registerer != nil && s.metrics == nil && s.regErr == nil {
		if err := s.useRegisterer(d.Registerer); err != nil {
			s.regErr = fmt.Errorf("%s: metrics: %w", s.cfg.Name, err)
		}
	}
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
func (s *Server) rebuild(tp trace.TracerProvider) {
	gs, _, err := s.build(tp)
	if err != nil {
		s.regErr = fmt.Errorf("%s: register: %w", s.cfg.Name, err)
		return
	}
	healthpb.RegisterHealthServer(gs, s.health)
	s.grpc, s.traced = gs, true
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
