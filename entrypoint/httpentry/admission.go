package httpentry

import (
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/fault"
)

// overloadBody is the JSON body of a request shed for overload.
const overloadBody = `{"code":"overloaded","message":"the server is at capacity; retry the request shortly"}` + "\n"

// overloadRetryAfter is the Retry-After of a request shed for overload, in seconds:
// a limit moves every window (100ms by default), so a second is long enough for
// the client's next try to find room and short enough not to idle it.
const overloadRetryAfter = "1"

// admissionOptions are what WithAdmission, WithCritical, WithExempt and
// WithRouteClass gave.
type admissionOptions struct {
	cfg       admission.Config
	critical  []string
	exempt    []string
	routeSets [][]string // each WithRouteClass's patterns
}

// WithAdmission configures the adaptive admission limit (see the admission
// package): a Server sheds ordinary requests beyond a concurrency limit that adapts
// to the latency it measures, with 503 and Retry-After, before they queue. It is on
// by default, with admission.Config's defaults; admission.Config{Off: true} turns it
// off. The SW_ADMISSION_* variables (admission.Config.FromEnv) override cfg; a
// malformed one, or bounds that do not fit, make New fail with a ConfigError naming
// the field ("Admission.MinLimit") and the variable.
//
// Shedding is not unreadiness: the Host's /readyz does not change, and its probes
// and PreStop are served on their own port, outside this Server's Gate. Streams
// (see WithStreamMatcher) and hijacked connections are never shed nor counted
// against the limit; neither are the routes of WithCritical and WithExempt.
func WithAdmission(cfg admission.Config) Option {
	return func(o *options) { o.admission.cfg = cfg }
}

// WithCritical declares routes that are never shed for overload: a request that
// matches one of patterns, read as http.ServeMux patterns ("POST /pay/{id}"), is
// counted against the limit and its latency drives it, but it is admitted whatever
// the limit (it is still refused while draining). Use it for the requests whose
// refusal costs more than their load. Matching costs a ServeMux lookup per request,
// only when some pattern is declared. An invalid pattern makes New fail.
func WithCritical(patterns ...string) Option {
	return func(o *options) { o.admission.critical = append(o.admission.critical, patterns...) }
}

// WithExempt declares routes outside the limiter altogether: neither shed, nor
// counted against the limit, nor sampled for latency — long polls, say, whose
// duration says nothing of load. They are still refused while draining. Patterns
// are read as in WithCritical.
func WithExempt(patterns ...string) Option {
	return func(o *options) { o.admission.exempt = append(o.admission.exempt, patterns...) }
}

// WithRouteClass declares a class of routes with an admission limit of its own:
// requests that match patterns (read as in WithCritical) count against a limit,
// with a latency baseline, of their own (admission.Limiter.NewClass), so that
// routes of different cost do not shed each other — a slow write route that
// slows further lowers its own limit, not the one the cheap reads share:
//
//	httpentry.WithRouteClass("POST /orders", "PUT /orders/{id}")
//
// Every other route keeps the Server's limit; each call declares one class. A
// route is in one class: a pattern also given to WithCritical or WithExempt, or
// to another class, makes New fail. The classes' refusals are counted with the
// Server's (ShedOverload, shed_total); the admission_limit gauge is the Server's
// own limit.
func WithRouteClass(patterns ...string) Option {
	return func(o *options) { o.admission.routeSets = append(o.admission.routeSets, patterns) }
}

// classes maps a request to its admission class and limiter by the patterns of
// WithCritical, WithExempt and WithRouteClass; a nil classes makes every request
// Ordinary under the Server's limiter.
type classes struct {
	mux *http.ServeMux
}

// class marks a ServeMux entry with its class and, for a WithRouteClass route,
// its limiter.
type class struct {
	c   entrypoint.Class
	lim entrypoint.Limiter // nil: the Server's
}

func (class) ServeHTTP(http.ResponseWriter, *http.Request) {}

// useAdmission builds the limiter and the route classes from o, recording problems
// in l under "Admission", "WithCritical" and "WithExempt".
func (s *Server) useAdmission(o admissionOptions, l *fault.Problems) {
	cfg, err := o.cfg.FromEnv(os.LookupEnv)
	l.Merge("Admission", err)
	lim, err := admission.New(cfg)
	l.Merge("Admission", err)
	if lim != nil { // nil: admission is off
		s.gate.SetLimiter(lim)
	}
	if len(o.critical)+len(o.exempt)+len(o.routeSets) == 0 {
		return
	}
	mux := http.NewServeMux()
	add := func(option string, c class, patterns []string) {
		for _, p := range patterns {
			func() {
				defer func() {
					if r := recover(); r != nil { // ServeMux panics on a bad or duplicate pattern
						l.Addf(option, "pattern %q: %v", p, r)
					}
				}()
				mux.Handle(p, c)
			}()
		}
	}
	add("WithCritical", class{c: entrypoint.Critical}, o.critical)
	add("WithExempt", class{c: entrypoint.Exempt}, o.exempt)
	for _, set := range o.routeSets {
		c := class{c: entrypoint.Ordinary}
		if nc := lim.NewClass(); nc != nil {
			c.lim = nc
		}
		add("WithRouteClass", c, set)
	}
	s.classes = &classes{mux: mux}
}

// admit asks the Gate to admit r, a stream when stream is true: see classOf.
func (s *Server) admit(r *http.Request, stream bool) (entrypoint.Ticket, entrypoint.Verdict) {
	c, lim := s.classOf(r, stream)
	return s.gate.AdmitTo(lim, c)
}

// classOf is r's admission class and the limiter of its route class (nil: the
// Server's): Exempt for a stream, the class of the pattern of WithCritical,
// WithExempt or WithRouteClass that matches, else Ordinary.
func (s *Server) classOf(r *http.Request, stream bool) (entrypoint.Class, entrypoint.Limiter) {
	switch {
	case stream:
		return entrypoint.Exempt, nil
	case s.classes == nil:
		return entrypoint.Ordinary, nil
	}
	if h, pattern := s.classes.mux.Handler(r); pattern != "" {
		if c, ok := h.(class); ok {
			return c.c, c.lim
		}
	}
	return entrypoint.Ordinary, nil
}

// shed answers a request refused for overload: a complete 503 with Retry-After, on a
// connection kept open — the client's next request may well find room, and a new
// connection would cost more than this answer.
func (s *Server) shed(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", overloadRetryAfter)
	h.Set("Content-Length", strconv.Itoa(len(overloadBody)))
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, overloadBody)
}

// ShedOverload reports how many requests were shed for overload since New.
func (s *Server) ShedOverload() uint64 {
	if lim := s.gate.Limiter(); lim != nil {
		return lim.ShedCount()
	}
	return 0
}

// AdmissionLimit reports the current adaptive concurrency limit, or 0 when
// admission is off.
func (s *Server) AdmissionLimit() int {
	if lim := s.gate.Limiter(); lim != nil {
		return lim.Limit()
	}
	return 0
}
