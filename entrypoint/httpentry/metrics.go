package httpentry

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/internal/transport"
)

// metrics are the RED metrics of WithRegisterer.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refused  prometheus.Counter
	panics   prometheus.Counter
	codes    [600]string // status code → label, made once so observing allocates nothing

	// cache holds, per method and status code, the series a request is counted in, so
	// that a request costs no label hashing once its combination was seen. Each
	// method's table is made on first use.
	cache [len(methodLabels)]atomic.Pointer[[500]atomic.Pointer[series]]
}

// series are the two metrics one (code, method) pair is counted in.
type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// methodLabels are the method label's values; methodIndex maps a request's method
// to one of them.
var methodLabels = [...]string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace, "other",
}

// newMetrics registers the metrics with reg under the constant label
// entrypoint=name. On failure it unregisters what it registered and returns the
// error.
func newMetrics(reg prometheus.Registerer, name string, inFlight func() int, capped *transport.ConnCap) (*metrics, error) {
	red, err := transport.NewRED(reg, name, transport.REDOpts{
		Protocol:       "http",
		RequestLabels:  []string{"code", "method"},
		DurationLabels: []string{"code", "method"},
		RequestsHelp:   "HTTP requests admitted and handled, by status code and method.",
		DurationHelp:   "Time from admission to the handler's return, by status code and method.",
		RefusedHelp:    "HTTP requests refused with 503 because the server was draining.",
		PanicsHelp:     "HTTP handlers that panicked (http.ErrAbortHandler excluded).",
		InFlightHelp:   "HTTP requests whose handler runs, plus hijacked connections still open.",
		Extra:          capped.Collectors("http"),
	}, inFlight)
	if err != nil {
		return nil, err
	}
	m := &metrics{requests: red.Requests, duration: red.Duration, refused: red.Refused, panics: red.Panics}
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
	var sr *series
	if aborted || code < 100 || code >= len(m.codes) {
		label := "aborted"
		if !aborted {
			label = strconv.Itoa(code)
		}
		method := methodLabels[methodIndex(w.req.Method)]
		sr = &series{m.requests.WithLabelValues(label, method), m.duration.WithLabelValues(label, method)}
	} else {
		sr = m.seriesFor(methodIndex(w.req.Method), code)
	}
	sr.requests.Inc()
	sr.duration.Observe(time.Since(start).Seconds())
}

// seriesFor returns the cached series of method index mi and code, making it on
// first use. Two requests racing to make it store equal values.
func (m *metrics) seriesFor(mi, code int) *series {
	tab := m.cache[mi].Load()
	if tab == nil {
		m.cache[mi].CompareAndSwap(nil, new([500]atomic.Pointer[series]))
		tab = m.cache[mi].Load()
	}
	slot := &tab[code-100]
	if sr := slot.Load(); sr != nil {
		return sr
	}
	label, method := m.codes[code], methodLabels[mi]
	sr := &series{m.requests.WithLabelValues(label, method), m.duration.WithLabelValues(label, method)}
	slot.Store(sr)
	return sr
}

// methodIndex keeps the method label's values few: any non-standard method is
// "other".
func methodIndex(m string) int {
	switch m {
	case http.MethodGet:
		return 0
	case http.MethodHead:
		return 1
	case http.MethodPost:
		return 2
	case http.MethodPut:
		return 3
	case http.MethodPatch:
		return 4
	case http.MethodDelete:
		return 5
	case http.MethodConnect:
		return 6
	case http.MethodOptions:
		return 7
	case http.MethodTrace:
		return 8
	}
	return len(methodLabels) - 1
}
