package grpcentry

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc/stats"

	"github.com/servicewright/servicewright/entrypoint"
)

var _ entrypoint.DefaultsUser = (*Server)(nil)

// SetDefaults takes the Host's telemetry for what no option gave: its logger unless
// WithLogger, its registry for the metrics unless WithRegisterer, its tracer
// provider unless WithTracerProvider. A registration that fails is reported by
// Bind. It does nothing once the Server is bound.
func (s *Server) SetDefaults(d entrypoint.Defaults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != entrypoint.PhaseNew {
		return
	}
	if s.own.log == nil && d.Logger != nil {
		s.log = d.Logger.With(zap.String("entrypoint", s.cfg.Name))
	}
	if s.own.tracer == nil && d.TracerProvider != nil {
		s.tracing.use(d.TracerProvider)
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

// tracing is the grpc.Server's stats handler: otelgrpc with the tracer provider the
// options or SetDefaults gave, or nothing. It is installed when the grpc.Server is
// built, in New, and filled in before Bind.
type tracing struct {
	h atomic.Pointer[stats.Handler]
}

func (t *tracing) use(tp trace.TracerProvider) {
	h := otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithMeterProvider(noop.NewMeterProvider()),
		otelgrpc.WithPropagators(propagation.NewCompositeTextMapPropagator(
			propagation.TraceContext{}, propagation.Baggage{})),
	)
	t.h.Store(&h)
}

func (t *tracing) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if h := t.h.Load(); h != nil {
		return (*h).TagRPC(ctx, info)
	}
	return ctx
}

func (t *tracing) HandleRPC(ctx context.Context, st stats.RPCStats) {
	if h := t.h.Load(); h != nil {
		(*h).HandleRPC(ctx, st)
	}
}

func (t *tracing) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	if h := t.h.Load(); h != nil {
		return (*h).TagConn(ctx, info)
	}
	return ctx
}

func (t *tracing) HandleConn(ctx context.Context, st stats.ConnStats) {
	if h := t.h.Load(); h != nil {
		(*h).HandleConn(ctx, st)
	}
}
