package grpcentry

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/transport"
)

// statusStreamDrained is the status a drained stream ends with, unless its handler
// returned a status of its own: UNAVAILABLE, which a client may retry at once,
// elsewhere.
var statusStreamDrained = status.New(codes.Unavailable, "grpc server is draining: reconnect")

// A stream is a streaming RPC in flight, which the drain ends on its own.
type stream struct {
	cancel context.CancelCauseFunc
}

// streamSet holds the streams whose handler runs.
type streamSet struct {
	transport.Streams[*stream]
}

// add registers a stream whose ctx derives from parent, and returns the stream and
// its ctx. A stream that arrives after the drain took its snapshot is drained at once.
func (ss *streamSet) add(parent context.Context) (*stream, context.Context) {
	ctx, cancel := context.WithCancelCause(parent)
	st := &stream{cancel: cancel}
	if !ss.Add(st) {
		cancel(entrypoint.ErrStreamDrained)
	}
	return st, ctx
}

// remove unregisters st once its handler returned.
func (ss *streamSet) remove(st *stream) {
	ss.Remove(st)
	st.cancel(context.Canceled)
}

func (st *stream) drain() { st.cancel(entrypoint.ErrStreamDrained) }

// drainedStatus is what a drained stream's handler result becomes: its own status
// if it returned one (other than CANCELLED), statusStreamDrained otherwise.
func drainedStatus(err error) error {
	if s, ok := status.FromError(err); ok && err != nil && s.Code() != codes.Canceled {
		return err
	}
	return statusStreamDrained.Err()
}

// serverStream carries the drainable ctx to the handler.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }
