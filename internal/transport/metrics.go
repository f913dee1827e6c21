package transport

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers every collector with reg, all or none: on the first failure it
// unregisters those it registered and returns the error.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, d := range cs[:i] {
				reg.Unregister(d)
			}
			return err
		}
	}
	return nil
}

// AlreadyRegistered tells whether err is the registry's complaint about a name
// already taken, so that the caller can word its configuration error.
func AlreadyRegistered(err error) bool {
	_, ok := errors.AsType[prometheus.AlreadyRegisteredError](err)
	return ok
}

// RED are a server entrypoint's rate, error and duration metrics, named
// servicewright_<Protocol>_… : requests_total and request_duration_seconds, counted
// when an admitted request's handler returns; refused_draining_total, the requests
// refused because the server was draining; panics_total; and the in_flight gauge.
type RED struct {
	Requests *prometheus.CounterVec
	Duration *prometheus.HistogramVec
	Refused  prometheus.Counter
	Panics   prometheus.Counter
}

// REDOpts says what a protocol's RED metrics are called, labelled by and mean.
type REDOpts struct {
	Protocol                      string   // "http", "grpc"
	RequestLabels, DurationLabels []string // the variable labels of requests_total and the histogram
	// The help texts of requests_total, request_duration_seconds,
	// refused_draining_total, panics_total and in_flight.
	RequestsHelp, DurationHelp, RefusedHelp, PanicsHelp, InFlightHelp string
	// Extra are more collectors registered with the same label, all or none with
	// the rest (a ConnCap's).
	Extra []prometheus.Collector
}

// NewRED registers the RED metrics of o with reg, all or none, under the constant
// label entrypoint=name; the in_flight gauge reads inFlight.
func NewRED(reg prometheus.Registerer, name string, o REDOpts, inFlight func() int) (RED, error) {
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"entrypoint": name}, reg)
	prefix := "servicewright_" + o.Protocol + "_"
	m := RED{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: prefix + "requests_total", Help: o.RequestsHelp,
		}, o.RequestLabels),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: prefix + "request_duration_seconds", Help: o.DurationHelp, Buckets: prometheus.DefBuckets,
		}, o.DurationLabels),
		Refused: prometheus.NewCounter(prometheus.CounterOpts{Name: prefix + "refused_draining_total", Help: o.RefusedHelp}),
		Panics:  prometheus.NewCounter(prometheus.CounterOpts{Name: prefix + "panics_total", Help: o.PanicsHelp}),
	}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: prefix + "in_flight", Help: o.InFlightHelp},
		func() float64 { return float64(inFlight()) })
	if err := Register(reg, append([]prometheus.Collector{m.Requests, m.Duration, m.Refused, m.Panics, gauge}, o.Extra...)...); err != nil {
		return RED{}, err
	}
	return m, nil
}
