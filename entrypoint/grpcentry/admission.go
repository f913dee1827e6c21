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

// admissionOptions are what WithAdmission, WithCritical and WithExempt gave.
type admissionOptions struct {
	cfg     admission.Config
	classes map[string]entrypoint.Class // full method → class
}

// admissionState is the Server's part of admission.
type admissionState struct {
	classes map[string]entrypoint.Class // nil: every method Ordinary
	shed    *transport.Shed             // nil without a registerer
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

// useAdmission builds the limiter from o, recording problems in l under
// "Admission".
func (s *Server) useAdmission(o admissionOptions, l *fault.Problems) {
	cfg, err := o.cfg.FromEnv(os.LookupEnv)
	l.Merge("Admission", err)
	lim, err := admission.New(cfg)
	l.Merge("Admission", err)
	s.gate.SetLimiter(lim)
	s.adm.classes = o.classes
}

// classOf is the admission class of a unary call to method.
func (s *Server) classOf(method string) entrypoint.Class {
	if c, ok := s.adm.classes[method]; ok {
		return c
	}
	return entrypoint.Ordinary
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
