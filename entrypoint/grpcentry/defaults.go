package grpcentry

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/transport"
)

var _ entrypoint.DefaultsUser = (*Server)(nil)

// SetDefaults takes the Host's telemetry for each field WithTelemetry left nil: the
// logger, the registry for the metrics, the tracer provider, the propagator and
// the error reporter (for handler panics). A no-op tracer provider
// traces nothing, at no cost per RPC. It returns a metrics registration that fails
// (the Host refuses the entrypoint then), and does nothing once the Server is bound.
func (s *Server) SetDefaults(d entrypoint.Telemetry) error { return s.base.SetDefaults(d) }

// useTelemetry takes t, the options' telemetry at New and that merged with the
// Host's at SetDefaults: the logger, the reporter, the tracing and, once, the
// metrics registry.
func (s *Server) useTelemetry(t entrypoint.Telemetry) error {
	if t.Logger != nil {
		s.log = t.Logger.With(zap.String("entrypoint", s.cfg.Name))
	}
	s.reporter = t.Reporter
	s.trace = newTracing(t.TracerProvider, t.Propagator)
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
