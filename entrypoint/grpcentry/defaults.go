package grpcentry

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/servicewright/servicewright/entrypoint"
)

var _ entrypoint.DefaultsUser = (*Server)(nil)

// SetDefaults takes the Host's telemetry for what no option gave: its logger unless
// WithLogger, its registry for the metrics unless WithRegisterer, its tracer
// provider unless WithTracerProvider. Taking the tracer provider builds the
// grpc.Server again with otelgrpc, calling the register function given to New once
// more (a no-op provider is not taken: tracing costs every RPC its stats events). A
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
	m, err := newMetrics(reg, s.cfg.Name, s.InFlight)
	if err != nil {
		return err
	}
	s.metrics = m
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
