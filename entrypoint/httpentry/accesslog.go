package httpentry

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/prestop"
)

// AccessLog configures the Server's access log (WithAccessLog).
type AccessLog struct {
	// Every logs one in Every of the requests answered below 500, counted per
	// Server; a 5xx, a panic and an aborted response are always logged. 0 means 1:
	// every request. It must not be negative.
	Every int
	// Headers names request headers logged with their values, e.g. "User-Agent".
	// None is logged by default. Headers that carry credentials — Authorization,
	// Proxy-Authorization, Cookie, and servicewright's PreStop and pprof tokens —
	// are refused: naming one makes New fail.
	Headers []string
	// Logger receives the access log. Default: the Server's logger.
	Logger *zap.Logger
}

// credentialHeaders are the request headers the access log never logs: the last two
// carry the Host's PreStop and profiling tokens.
var credentialHeaders = [...]string{"Authorization", "Proxy-Authorization", "Cookie",
	prestop.Header, prestop.PprofHeader}

// WithAccessLog logs one line per request ("http request") as the Server finishes
// it, after recovery, so that a panic's 500 is logged as sent: the method, the
// path, the query's keys (never their values, which carry tokens as often as not),
// the matched route, the status, whether the response was aborted, the duration,
// the client's address, the request id (WithRequestID), the trace id, and the
// headers cfg names. Requests are sampled (AccessLog.Every), 5xx and panics
// excepted; a request not sampled costs an atomic add.
//
// A request refused by the drain or shed by admission is not logged: those are
// counted in the metrics (servicewright_http_shed_total), and logging each of them
// would add work exactly when the server has none to spare.
func WithAccessLog(cfg AccessLog) Option {
	return func(o *options) {
		if cfg.Every < 0 {
			o.Problems.Addf("WithAccessLog", "Every must not be negative, got %d", cfg.Every)
		}
		for _, h := range cfg.Headers {
			for _, c := range credentialHeaders {
				if strings.EqualFold(h, c) {
					o.Problems.Addf("WithAccessLog", "header %q carries a credential and is never logged", h)
				}
			}
		}
		o.access = &cfg
	}
}

// accessLog is a Server's access log: its configuration and its sampling counter.
type accessLog struct {
	every   uint64
	headers []string // canonical
	log     *zap.Logger
	epoch   time.Time // what now counts from
	seen    atomic.Uint64
}

// newAccessLog returns the access log cfg asks for, or nil for none.
func newAccessLog(cfg *AccessLog, l *fault.Problems) *accessLog {
	if cfg == nil || l.Len() > 0 {
		return nil
	}
	a := &accessLog{every: uint64(max(cfg.Every, 1)), log: cfg.Logger, epoch: time.Now()}
	for _, h := range cfg.Headers {
		a.headers = append(a.headers, http.CanonicalHeaderKey(h))
	}
	return a
}

// now reads the monotonic clock, as metrics.now does.
func (a *accessLog) now() time.Duration { return time.Since(a.epoch) }

// record logs the request w served when it is sampled, is a 5xx, panicked (p) or
// was aborted. fallback is the Server's logger.
func (a *accessLog) record(w *response, p *handlerPanic, abort bool, fallback *zap.Logger) {
	status := w.status
	switch {
	case w.hijacked:
		status = http.StatusSwitchingProtocols
	case status == 0:
		status = http.StatusOK // what net/http sends for a handler that wrote nothing
	}
	n := a.seen.Add(1)
	if status < 500 && p == nil && !abort && n%a.every != 0 {
		return
	}
	r := w.req
	log := a.log
	if log == nil {
		log = fallback
	}
	fields := make([]zap.Field, 0, 10+len(a.headers))
	fields = append(fields, zap.String("method", r.Method), zap.String("path", r.URL.Path))
	if keys := queryKeys(r.URL.RawQuery); keys != "" {
		fields = append(fields, zap.String("query_keys", keys))
	}
	if pattern := routeOf(r, p); pattern != "" {
		fields = append(fields, zap.String("pattern", pattern))
	}
	fields = append(fields, zap.Int("status", status), zap.Duration("duration", a.now()-w.logStart),
		zap.String("remote", r.RemoteAddr))
	if abort {
		fields = append(fields, zap.Bool("aborted", true))
	}
	if id := RequestID(r.Context()); id != "" {
		fields = append(fields, zap.String("request_id", id))
	}
	if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
		fields = append(fields, zap.String("trace_id", sc.TraceID().String()))
	}
	for _, h := range a.headers {
		if v := r.Header.Values(h); len(v) > 0 {
			fields = append(fields, zap.Strings(h, v))
		}
	}
	log.Info("http request", fields...)
}

// queryKeys returns the keys of a raw query, '&'-separated, without their values.
func queryKeys(raw string) string {
	if raw == "" {
		return ""
	}
	var b strings.Builder
	for part := range strings.SplitSeq(raw, "&") {
		key, _, _ := strings.Cut(part, "=")
		if key == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(key)
	}
	return b.String()
}
