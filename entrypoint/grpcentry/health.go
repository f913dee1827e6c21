package grpcentry

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// healthPrefix starts the full method names of the health service, which bypasses
// the Gate: it must answer NOT_SERVING through the drain delay, and its Watch streams
// must never hold the drain.
const healthPrefix = "/grpc.health.v1.Health/"

func isHealth(fullMethod string) bool { return strings.HasPrefix(fullMethod, healthPrefix) }

// errWatchDrained ends a Watch stream at the drain. A client-side health check takes
// UNAVAILABLE as "not serving" and retries with backoff, by then elsewhere.
var errWatchDrained = status.Error(codes.Unavailable, "grpc server is draining: not serving")

// healthServer is grpc.health.v1.Health over one serving flag shared by every
// service it knows.
type healthServer struct {
	healthpb.UnimplementedHealthServer
	known map[string]bool // "" and each service answered for

	mu        sync.Mutex
	serving   bool          // the last verdict
	withdrawn bool          // the stop or the drain came: NOT_SERVING for good
	changed   chan struct{} // closed and replaced at each change of the answer
	ended     chan struct{} // closed at the drain: every Watch returns
}

func newHealthServer(services []string) *healthServer {
	h := &healthServer{known: map[string]bool{"": true}, changed: make(chan struct{}), ended: make(chan struct{})}
	for _, s := range services {
		h.known[s] = true
	}
	return h
}

// set records a verdict; after withdraw it does nothing.
func (h *healthServer) set(serving bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.withdrawn || h.serving == serving {
		return
	}
	h.serving = serving
	close(h.changed)
	h.changed = make(chan struct{})
}

// withdraw answers NOT_SERVING from now on; with end set it also ends every Watch
// and refuses new ones.
func (h *healthServer) withdraw(end bool) {
	h.set(false)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.withdrawn = true
	if end {
		select {
		case <-h.ended:
		default:
			close(h.ended)
		}
	}
}

func (h *healthServer) answer() (healthpb.HealthCheckResponse_ServingStatus, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.serving {
		return healthpb.HealthCheckResponse_SERVING, h.changed
	}
	return healthpb.HealthCheckResponse_NOT_SERVING, h.changed
}

// Check answers the service's status, NOT_FOUND for a service it does not know.
func (h *healthServer) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if !h.known[req.GetService()] {
		return nil, status.Errorf(codes.NotFound, "unknown service %q", req.GetService())
	}
	st, _ := h.answer()
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// List answers every known service's status.
func (h *healthServer) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	st, _ := h.answer()
	out := &healthpb.HealthListResponse{Statuses: make(map[string]*healthpb.HealthCheckResponse, len(h.known))}
	for name := range h.known {
		out.Statuses[name] = &healthpb.HealthCheckResponse{Status: st}
	}
	return out, nil
}

// Watch sends the status at once and at each change, until the client goes away or
// the drain begins; then it returns UNAVAILABLE. A service it does not know is
// answered SERVICE_UNKNOWN, and the stream stays open.
func (h *healthServer) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	known := h.known[req.GetService()]
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	for {
		st, changed := h.answer()
		if !known {
			st = healthpb.HealthCheckResponse_SERVICE_UNKNOWN
		}
		select {
		case <-h.ended:
			return errWatchDrained
		default:
		}
		if st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-changed:
		case <-h.ended:
			return errWatchDrained
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}
