package grpcentry

import (
	"context"
	"os"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/transport"
)

// overloadPushback is what a call shed for overload is told to wait before a retry,
// in grpc-retry-pushback-ms: grpc-go's retry policy waits that long instead of its
// own backoff.
const overloadPushback = 1000

// errOverloaded is what a call shed for overload gets: RESOURCE_EXHAUSTED, with the
// pushback in its trailer.
var errOverloaded = status.Error(codes.ResourceExhausted, "grpc server is at capacity: retry shortly")

// pushbackTrailer is the trailer of a shed call.
var pushbackTrailer = metadata.Pairs("grpc-retry-pushback-ms", strconv.Itoa(overloadPushback))

// admissionOptions are what WithAdmission, WithCritical, WithExempt and
// WithRouteClass gave.
type admissionOptions struct {
	cfg       admission.Config
	classes   map[string]entrypoint.Class // full method → class
	routeSets [][]string                  // each WithRouteClass's full methods
}

// admissionState is the Server's part of admission.
type admissionState struct {
	classes map[string]entrypoint.Class   // nil: every method Ordinary
	lims    map[string]entrypoint.Limiter // full method → its route class's limiter
	shed    *transport.Shed               // nil without a registerer
}

// WithAdmission configures the adaptive admission limit (see the admission
// package): the Server sheds ordinary calls beyond a concurrency limit that adapts
// to the latency it measures, with RESOURCE_EXHAUSTED and a grpc-retry-pushback-ms
// trailer, before they queue. It is on by default, with admission.Config's
// defaults; admission.Config{Off: true} turns it off. The SW_ADMISSION_* variables
// (admission.Config.FromEnv) override cfg; a malformed one, or bounds that do not
// fit, make New fail with a ConfigError naming the field ("Admission.MinLimit") and
// the variable.
//
// grpc.health.v1 is never shed nor counted. Streaming calls are Exempt: how long a
// stream lasts says nothing of load. Shedding is not unreadiness: the health
// service keeps answering SERVING. With a registerer, the Server also exports
// servicewright_grpc_shed_total{reason="draining"|"overload"|"saturated"},
// servicewright_grpc_admission_limit and servicewright_grpc_admission_share (0 when
// off).
func WithAdmission(cfg admission.Config) Option {
	return func(o *options) { o.admission.cfg = cfg }
}

// WithCritical declares unary methods, by full name ("/pkg.Service/Method"), that
// are never shed for overload: they count against the limit, and their latency
// drives it, but they are admitted whatever the limit (and still refused while
// draining).
func WithCritical(fullMethods ...string) Option {
	return withClass(entrypoint.Critical, fullMethods)
}

// WithExempt declares unary methods, by full name, outside the limiter altogether:
// neither shed, nor counted against the limit, nor sampled for latency.
func WithExempt(fullMethods ...string) Option {
	return withClass(entrypoint.Exempt, fullMethods)
}

// WithRouteClass declares a class of unary methods, by full name, with an admission
// limit of its own: their calls count against a limit, with a latency baseline,
// of their own (admission.Limiter.NewClass), so that methods of different cost do
// not shed each other — a slow write method that slows further lowers its own
// limit, not the one the cheap reads share:
//
//	grpcentry.WithRouteClass("/shop.Orders/Place", "/shop.Orders/Cancel")
//
// Every other method keeps the Server's limit; each call declares one class. A
// method is in one class: one also given to WithCritical, WithExempt or another
// class makes New fail. The classes' refusals are counted with the Server's.
func WithRouteClass(fullMethods ...string) Option {
	return func(o *options) { o.admission.routeSets = append(o.admission.routeSets, fullMethods) }
}

func withClass(c entrypoint.Class, methods []string) Option {
	return func(o *options) {
		if o.admission.classes == nil {
			o.admission.classes = map[string]entrypoint.Class{}
		}
		for _, m := range methods {
			o.admission.classes[m] = c
		}
	}
}

// useAdmission builds the limiters from o, recording problems in l under
// "Admission" and "WithRouteClass".
func (s *Server) useAdmission(o admissionOptions, l *fault.Problems) {
	cfg, err := o.cfg.FromEnv(os.LookupEnv)
	l.Merge("Admission", err)
	lim, err := admission.New(cfg)
	l.Merge("Admission", err)
	if lim != nil { // nil: admission is off
		s.gate.SetLimiter(lim)
	}
	s.adm.classes = o.classes
	for _, set := range o.routeSets {
		class := lim.NewClass()
		for _, m := range set {
			if _, ok := s.adm.classes[m]; ok {
				l.Addf("WithRouteClass", "method %q is already in a class", m)
				continue
			}
			if _, ok := s.adm.lims[m]; ok {
				l.Addf("WithRouteClass", "method %q is already in a route class", m)
				continue
			}
			if s.adm.lims == nil {
				s.adm.lims = map[string]entrypoint.Limiter{}
			}
			s.adm.lims[m] = nil // admission off: the method is in a class all the same
			if class != nil {
				s.adm.lims[m] = class
			}
		}
	}
}

// admit asks the Gate to admit a unary call to method, by its class and its route
// class's limiter.
func (s *Server) admit(method string) (entrypoint.Ticket, entrypoint.Verdict) {
	c, ok := s.adm.classes[method]
	if !ok {
		c = entrypoint.Ordinary
	}
	return s.gate.AdmitTo(s.adm.lims[method], c)
}

// refuseFor answers a call refused with verdict: UNAVAILABLE while draining,
// RESOURCE_EXHAUSTED with the pushback trailer under overload, set on ss for a
// stream (ctx nil) and through ctx for a unary call (ss nil).
func (s *Server) refuseFor(ctx context.Context, ss grpc.ServerStream, v entrypoint.Verdict) error {
	if v == entrypoint.Draining {
		s.refuse()
		if s.adm.shed != nil {
			s.adm.shed.Draining.Inc()
		}
		return errDraining
	}
	if ss != nil {
		ss.SetTrailer(pushbackTrailer)
	} else {
		_ = grpc.SetTrailer(ctx, pushbackTrailer)
	}
	return errOverloaded
}

// ShedOverload reports how many calls were shed for overload since New.
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
