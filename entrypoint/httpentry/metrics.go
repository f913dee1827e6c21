package httpentry

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the RED metrics of WithMetrics.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refused  prometheus.Counter
	panics   prometheus.Counter
	codes    [600]string // status code → label, made once so observing allocates nothing
}

// newMetrics registers the metrics with reg under the constant label
// entrypoint=name. On failure it unregisters what it registered and returns the
// error.
func newMetrics(reg prometheus.Registerer, name string, inFlight func() int) (*metrics, error) {
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"entrypoint": name}, reg)
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "servicewright_http_requests_total",
			Help: "HTTP requests admitted and handled, by status code and method.",
		}, []string{"code", "method"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "servicewright_http_request_duration_seconds",
			Help:    "Time from admission to the handler's return, by status code and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"code", "method"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "servicewright_http_refused_draining_total",
			Help: "HTTP requests refused with 503 because the server was draining.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "servicewright_http_panics_total",
			Help: "HTTP handlers that panicked (http.ErrAbortHandler excluded).",
		}),
	}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "servicewright_http_in_flight",
		Help: "HTTP requests whose handler runs, plus hijacked connections still open.",
	}, func() float64 { return float64(inFlight()) })

	var done []prometheus.Collector
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.refused, m.panics, gauge} {
		if err := reg.Register(c); err != nil {
			for _, d := range done {
				reg.Unregister(d)
			}
			return nil, err
		}
		done = append(done, c)
	}
	for code := 100; code < len(m.codes); code++ {
		m.codes[code] = strconv.Itoa(code)
	}
	return m, nil
}

// observe counts a request whose handler returned.
func (m *metrics) observe(w *response, start time.Time, aborted bool) {
	code := w.status
	switch {
	case w.hijacked && code == 0:
		code = http.StatusSwitchingProtocols
	case code == 0:
		code = http.StatusOK
	}
	var label string
	switch {
	case aborted:
		label = "aborted"
	case code >= 100 && code < len(m.codes):
		label = m.codes[code]
	default:
		label = strconv.Itoa(code)
	}
	method := methodLabel(w.req.Method)
	m.requests.WithLabelValues(label, method).Inc()
	m.duration.WithLabelValues(label, method).Observe(time.Since(start).Seconds())
}

// methodLabel keeps the method label's values few: any non-standard method is
// "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// errAlreadyRegistered tells whether err is prometheus's complaint about a name
// already taken, to word the ConfigError.
func errAlreadyRegistered(err error) bool {
	_, ok := errors.AsType[prometheus.AlreadyRegisteredError](err)
	return ok
}
