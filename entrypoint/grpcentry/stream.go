package grpcentry

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrStreamDrained is the context.Cause of a streaming RPC's ctx when the Server ends
// it: the spread drain reached it, or Stop cut it. A handler that returns when its
// ctx is done needs nothing more: the Server turns what it returns into
// StatusStreamDrained. One that checks context.Cause can send a last message first.
var ErrStreamDrained = errors.New("grpcentry: stream closed by the server's drain")

// StatusStreamDrained is the status a drained stream ends with, unless its handler
// returned a status of its own: UNAVAILABLE, which a client may retry at once,
// elsewhere.
var StatusStreamDrained = status.New(codes.Unavailable, "grpc server is draining: reconnect")

// A stream is a streaming RPC in flight, which the drain ends on its own.
type stream struct {
	seq    uint64
	cancel context.CancelCauseFunc
}

// streamSet holds the streams whose handler runs.
type streamSet struct {
	mu     sync.Mutex
	seq    uint64
	m      map[*stream]struct{}
	sealed bool // a drain took its snapshot: a late stream is drained on arrival
}

// add registers a stream whose ctx derives from parent, and returns the stream and
// its ctx.
func (ss *streamSet) add(parent context.Context) (*stream, context.Context) {
	ctx, cancel := context.WithCancelCause(parent)
	st := &stream{cancel: cancel}
	ss.mu.Lock()
	if ss.m == nil {
		ss.m = make(map[*stream]struct{})
	}
	ss.seq++
	st.seq = ss.seq
	ss.m[st] = struct{}{}
	sealed := ss.sealed
	ss.mu.Unlock()
	if sealed {
		cancel(ErrStreamDrained)
	}
	return st, ctx
}

// remove unregisters st once its handler returned.
func (ss *streamSet) remove(st *stream) {
	ss.mu.Lock()
	delete(ss.m, st)
	ss.mu.Unlock()
	st.cancel(context.Canceled)
}

// snapshot returns the streams, oldest first; with seal set, a stream registered
// later is drained as soon as it registers.
func (ss *streamSet) snapshot(seal bool) []*stream {
	ss.mu.Lock()
	ss.sealed = ss.sealed || seal
	list := make([]*stream, 0, len(ss.m))
	for st := range ss.m {
		list = append(list, st)
	}
	ss.mu.Unlock()
	slices.SortFunc(list, func(a, b *stream) int { return cmp.Compare(a.seq, b.seq) })
	return list
}

func (st *stream) drain() { st.cancel(ErrStreamDrained) }

// drainedStatus is what a drained stream's handler result becomes: its own status
// if it returned one (other than CANCELLED), StatusStreamDrained otherwise.
func drainedStatus(err error) error {
	if s, ok := status.FromError(err); ok && err != nil && s.Code() != codes.Canceled {
		return err
	}
	return StatusStreamDrained.Err()
}

// serverStream carries the drainable ctx to the handler.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }
