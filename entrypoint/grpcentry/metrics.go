package grpcentry

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/servicewright/servicewright/internal/transport"
)

// metrics are the RED metrics of WithTelemetry's Registerer.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refused  prometheus.Counter
	panics   prometheus.Counter
	abuses   prometheus.Counter // connections cut for resetting too many streams

	// series caches, per method, the counters by code and the histogram, so that an
	// RPC costs no label hashing once its method was seen.
	series sync.Map // string → *methodSeries

	epoch time.Time // what now counts from: its monotonic reading only
}

// now reads the monotonic clock, as the time elapsed since the metrics were made: a
// call's duration is two such reads, where time.Now would read the wall clock too.
func (m *metrics) now() time.Duration { return time.Since(m.epoch) }

type methodSeries struct {
	duration prometheus.Observer
	codes    [codes.Unauthenticated + 1]prometheus.Counter
}

// newMetrics registers the metrics with reg under the constant label
// entrypoint=name. On failure it unregisters what it registered and returns the
// error.
func newMetrics(reg prometheus.Registerer, name string, inFlight func() int, capped *transport.ConnCap) (*metrics, error) {
	red, err := transport.NewRED(reg, name, transport.REDOpts{
		Protocol:       "grpc",
		RequestLabels:  []string{"method", "code"},
		DurationLabels: []string{"method"},
		RequestsHelp:   "gRPC calls admitted and handled, by full method and status code.",
		DurationHelp:   "Time from admission to the handler's return, by full method.",
		RefusedHelp:    "gRPC calls refused with UNAVAILABLE because the server was draining.",
		PanicsHelp:     "gRPC handlers that panicked; each call was answered INTERNAL.",
		InFlightHelp:   "gRPC calls whose handler runs.",
		Extra:          capped.Collectors("grpc"),
	}, inFlight)
	if err != nil {
		return nil, err
	}
	m := &metrics{requests: red.Requests, duration: red.Duration, refused: red.Refused, panics: red.Panics, epoch: time.Now(),
		abuses: prometheus.NewCounter(prometheus.CounterOpts{Name: "servicewright_grpc_reset_abuse_closed_total",
			Help: "gRPC connections sent a GOAWAY and closed for resetting more streams than MaxStreamResets and StreamResetRate allow."}),
	}
	wrapped := prometheus.WrapRegistererWith(prometheus.Labels{"entrypoint": name}, reg)
	if err := transport.Register(wrapped, m.abuses); err != nil {
		for _, c := range []prometheus.Collector{red.Requests, red.Duration, red.Refused, red.Panics} {
			wrapped.Unregister(c)
		}
		return nil, err
	}
	return m, nil
}

// observe counts a call whose handler returned with code.
func (m *metrics) observe(method string, code codes.Code, start time.Duration) {
	v, ok := m.series.Load(method)
	if !ok {
		s := &methodSeries{duration: m.duration.WithLabelValues(method)}
		for c := range s.codes {
			s.codes[c] = m.requests.WithLabelValues(method, codeName(codes.Code(c)))
		}
		v, _ = m.series.LoadOrStore(method, s)
	}
	s := v.(*methodSeries)
	if int(code) < len(s.codes) {
		s.codes[code].Inc()
	} else {
		m.requests.WithLabelValues(method, code.String()).Inc()
	}
	s.duration.Observe((m.now() - start).Seconds())
}

// codeName is a code as the metric labels it: "OK", "UNAVAILABLE".
func codeName(c codes.Code) string {
	switch c {
	case codes.OK:
		return "OK"
	case codes.Canceled:
		return "CANCELLED"
	case codes.Unknown:
		return "UNKNOWN"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.AlreadyExists:
		return "ALREADY_EXISTS"
	case codes.PermissionDenied:
		return "PERMISSION_DENIED"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.FailedPrecondition:
		return "FAILED_PRECONDITION"
	case codes.Aborted:
		return "ABORTED"
	case codes.OutOfRange:
		return "OUT_OF_RANGE"
	case codes.Unimplemented:
		return "UNIMPLEMENTED"
	case codes.Internal:
		return "INTERNAL"
	case codes.Unavailable:
		return "UNAVAILABLE"
	case codes.DataLoss:
		return "DATA_LOSS"
	case codes.Unauthenticated:
		return "UNAUTHENTICATED"
	}
	return c.String()
}
