package httpentry

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/internal/transport"
)

// metrics are the RED metrics of WithTelemetry's Registerer.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refused  prometheus.Counter
	panics   prometheus.Counter

	shedDraining *transport.Counter // shed_total{reason="draining"}; the others are the Limiter's
	codes        [600]string        // status code → label, made once so observing allocates nothing

	// routes holds, per route, per method and status code, the series a request is
	// counted in, so that a request costs one map read and no label hashing once its
	// combination was seen. The map is copied on write: a new route is rare (the
	// routes are the ServeMux's patterns), a read is every request.
	routes atomic.Pointer[map[string]*routeSeries]
	mu     sync.Mutex // serialises the copies of routes

	epoch time.Time // what now counts from: its monotonic reading only
}

// now reads the monotonic clock, as the time elapsed since the metrics were made. A
// request's duration is two such reads: time.Now would read the wall clock as well,
// which a duration does not need (the read is the larger part of the metrics' cost
// per request, see docs/cost.md).
func (m *metrics) now() time.Duration { return time.Since(m.epoch) }

// routeSeries is one route's cache: per method, a table by status code, made on
// first use.
type routeSeries [len(methodLabels)]atomic.Pointer[[500]atomic.Pointer[series]]

// unmatched is the route label of a request no ServeMux pattern matched (a 404, or
// a handler that is not a ServeMux): never the raw path, whose values are unbounded.
const unmatched = "unmatched"

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
func newMetrics(reg prometheus.Registerer, name string, inFlight func() int, lim func() entrypoint.Limiter, capped *transport.ConnCap) (*metrics, error) {
	shed, err := transport.NewShed(reg, name, "http", lim)
	if err != nil {
		return nil, err
	}
	red, err := transport.NewRED(reg, name, transport.REDOpts{
		Protocol:       "http",
		RequestLabels:  []string{"code", "method", "route"},
		DurationLabels: []string{"code", "method", "route"},
		RequestsHelp:   "HTTP requests admitted and handled, by status code, method and route (the ServeMux pattern's path, or unmatched).",
		DurationHelp:   "Time from admission to the handler's return, by status code, method and route.",
		RefusedHelp:    "HTTP requests refused with 503 because the server was draining.",
		PanicsHelp:     "HTTP handlers that panicked (http.ErrAbortHandler excluded).",
		InFlightHelp:   "HTTP requests whose handler runs, plus hijacked connections still open.",
		Extra:          capped.Collectors("http"),
	}, inFlight)
	if err != nil {
		shed.Unregister()
		return nil, err
	}
	m := &metrics{requests: red.Requests, duration: red.Duration, refused: red.Refused, panics: red.Panics,
		shedDraining: shed.Draining, epoch: time.Now()}
	for code := 100; code < len(m.codes); code++ {
		m.codes[code] = strconv.Itoa(code)
	}
	m.routes.Store(&map[string]*routeSeries{})
	return m, nil
}

// observe counts a request whose handler returned.
func (m *metrics) observe(w *response, start time.Duration, aborted bool) {
	code := w.status
	switch {
	case w.hijacked && code == 0:
		code = http.StatusSwitchingProtocols
	case code == 0:
		code = http.StatusOK
	}
	var sr *series
	switch mi, pattern := methodIndex(w.req.Method), w.req.Pattern; {
	case aborted || code < 100 || code >= len(m.codes):
		label := "aborted"
		if !aborted {
			label = strconv.Itoa(code)
		}
		route := routeLabel(pattern)
		sr = &series{m.requests.WithLabelValues(label, methodLabels[mi], route), m.duration.WithLabelValues(label, methodLabels[mi], route)}
	case w.last.series != nil && w.last.pattern == pattern && w.last.method == mi && w.last.code == code:
		sr = w.last.series // the pattern is ServeMux's own string: compared by its pointer
	default:
		sr = m.seriesFor(routeLabel(pattern), mi, code)
		w.last = lastSeries{pattern, mi, code, sr}
	}
	sr.requests.Inc()
	sr.duration.Observe((m.now() - start).Seconds())
}

// lastSeries is the series a response wrapper last counted a request in, and what
// they were for: the next request through the same pooled wrapper is usually of
// the same route, method and status, and then costs no map read. The wrappers come
// from a pool per Server, so the series are always the Server's own.
type lastSeries struct {
	pattern string // the request's Pattern, as ServeMux stamped it
	method  int    // methodIndex
	code    int
	series  *series
}

// routeLabel is the route label of a request ServeMux stamped with pattern.
func routeLabel(pattern string) string {
	if route := routeOfPattern(pattern); route != "" {
		return route
	}
	return unmatched
}

// seriesFor returns the cached series of route, method index mi and code, making it
// on first use. Two requests racing to make it store equal values.
func (m *metrics) seriesFor(route string, mi, code int) *series {
	rs := (*m.routes.Load())[route]
	if rs == nil {
		rs = m.addRoute(route)
	}
	tab := rs[mi].Load()
	if tab == nil {
		rs[mi].CompareAndSwap(nil, new([500]atomic.Pointer[series]))
		tab = rs[mi].Load()
	}
	slot := &tab[code-100]
	if sr := slot.Load(); sr != nil {
		return sr
	}
	label, method := m.codes[code], methodLabels[mi]
	sr := &series{m.requests.WithLabelValues(label, method, route), m.duration.WithLabelValues(label, method, route)}
	slot.Store(sr)
	return sr
}

// addRoute returns route's cache, adding it to a copy of the map when it is new.
func (m *metrics) addRoute(route string) *routeSeries {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.routes.Load()
	if rs := old[route]; rs != nil {
		return rs
	}
	next := make(map[string]*routeSeries, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	rs := new(routeSeries)
	next[route] = rs
	m.routes.Store(&next)
	return rs
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
