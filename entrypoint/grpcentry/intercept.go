package grpcentry

import (
	"context"
	"errors"
	"net"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint"
)

// errDraining is what an RPC that arrives after the Gate closed gets: UNAVAILABLE,
// which gRPC clients treat as safe to retry, elsewhere.
var errDraining = status.Error(codes.Unavailable, "grpc server is draining: retry on another replica")

// errPanic is what the client of a handler that panicked gets.
var errPanic = status.Error(codes.Internal, "internal error")

// unary is the outermost unary interceptor: the Gate, the span (trace.go), panic
// recovery and metrics. The span is started once the call is admitted and ended
// once its status, a panic's INTERNAL included, is known; the health service is
// neither traced nor counted.
func (s *Server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	if isHealth(info.FullMethod) {
		defer func() {
			if r := recover(); r != nil {
				err = s.panicked(ctx, info.FullMethod, r)
			}
		}()
		return handler(ctx, req)
	}
	t, verdict := s.admit(info.FullMethod)
	if verdict != entrypoint.Admitted {
		return nil, s.refuseFor(ctx, nil, verdict)
	}
	defer t.Leave()
	start := s.now()
	var span trace.Span
	if s.trace.Tracer != nil {
		ctx, span = s.trace.start(ctx, info.FullMethod)
	}
	defer func() {
		r := recover()
		if r != nil {
			err = s.panicked(ctx, info.FullMethod, r)
		}
		if span != nil {
			endSpan(span, info.FullMethod, err, r)
		}
		s.observe(info.FullMethod, err, start)
	}()
	return handler(ctx, req)
}

// stream is the outermost stream interceptor: the Gate, the span (trace.go), the
// spread drain's ctx, panic recovery and metrics. A call to a method not registered
// (unknownCall answers it) is traced and counted under unknownMethod.
func (s *Server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	if isHealth(info.FullMethod) {
		defer func() {
			if r := recover(); r != nil {
				err = s.panicked(ss.Context(), info.FullMethod, r)
			}
		}()
		return handler(srv, ss)
	}
	method := s.methodName(info.FullMethod) // unknownMethod for one not registered (unknown.go)

	t, verdict := s.gate.Admit(entrypoint.Exempt) // a stream's length says nothing of load
	if verdict != entrypoint.Admitted {
		return s.refuseFor(context.Background(), ss, verdict) // ctx serves only a unary refusal
	}
	defer t.Leave()
	start := s.now()
	ctx := ss.Context()
	var span trace.Span
	if s.trace.Tracer != nil {
		ctx, span = s.trace.start(ctx, method)
	}
	st, ctx := s.streams.add(ctx)
	defer func() {
		r := recover()
		if r != nil {
			err = s.panicked(ctx, method, r)
		}
		if errors.Is(context.Cause(ctx), entrypoint.ErrStreamDrained) {
			err = drainedStatus(err)
		}
		s.streams.remove(st)
		if span != nil {
			endSpan(span, method, err, r)
		}
		s.observe(method, err, start)
	}()
	return handler(srv, &serverStream{ServerStream: ss, ctx: ctx})
}

// panicked logs, counts and reports a handler's panic r and returns INTERNAL for the
// client.
func (s *Server) panicked(ctx context.Context, method string, r any) error {
	s.panics.Add(1)
	if s.metrics != nil {
		s.metrics.panics.Inc()
	}
	stack := debug.Stack()
	s.log.Error("grpc handler panicked; answered INTERNAL",
		zap.String("method", method), zap.Any("panic", r), zap.ByteString("stack", stack))
	s.reportPanic(ctx, method, r, stack)
	return errPanic
}

func (s *Server) refuse() {
	s.refused.Add(1)
	if s.metrics != nil {
		s.metrics.refused.Inc()
	}
}

// now is a call's start for its metrics: the monotonic clock, read only when there
// are metrics to observe.
func (s *Server) now() time.Duration {
	if s.metrics == nil {
		return 0
	}
	return s.metrics.now()
}

func (s *Server) observe(method string, err error, start time.Duration) {
	if s.metrics != nil {
		s.metrics.observe(method, status.Code(err), start)
	}
}

// resetAbuse logs and counts a connection cut for resetting too many streams.
func (s *Server) resetAbuse(remote net.Addr) {
	s.abuses.Add(1)
	if s.metrics != nil {
		s.metrics.abuses.Inc()
	}
	s.log.Warn("grpc connection sent GOAWAY and closed: too many stream resets",
		zap.Stringer("remote", remote), zap.Int("max_stream_resets", s.cfg.MaxStreamResets),
		zap.Int("stream_reset_rate", s.cfg.StreamResetRate))
}
