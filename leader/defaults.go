package leader

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
)

var _ entrypoint.DefaultsUser = (*Leadership)(nil)

// tracerName names the Leadership's tracer.
const tracerName = "github.com/servicewright/servicewright/leader"

// given is what opts set, without New's defaults: SetDefaults fills in the rest.
func given(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// telemetry is what the options gave of the Host's telemetry.
func (o options) telemetry() entrypoint.Telemetry {
	return entrypoint.Telemetry{Logger: o.log, Registerer: o.reg, TracerProvider: o.tracer, Reporter: o.reporter}
}

// SetDefaults takes the Host's telemetry for what no option gave: its logger unless
// WithLogger, its registry for the leadership metrics unless WithRegisterer, its
// tracer provider (the "leadership.term" spans) unless WithTracerProvider, its error
// reporter (for the panics of lead and Claim) unless WithReporter. It returns a
// metrics registration that fails (the Host refuses the entrypoint then), and does
// nothing once Serve has started the campaign.
func (l *Leadership) SetDefaults(d entrypoint.Telemetry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return nil
	}
	t := l.own.telemetry().Or(d)
	if t.Logger != nil {
		l.log = l.logger(t.Logger)
	}
	if t.TracerProvider != nil {
		l.tracer = t.TracerProvider.Tracer(tracerName)
	}
	l.reporter = t.Reporter
	if l.own.reg == nil && t.Registerer != nil {
		m, err := newMetrics(t.Registerer)
		if err != nil {
			return fmt.Errorf("leadership %q: metrics: %w", l.conf.Name, err)
		}
		l.m = m
	}
	return nil
}

// logger is base with the Leadership's fields.
func (l *Leadership) logger(base *zap.Logger) *zap.Logger {
	return base.With(zap.String("entrypoint", l.conf.Name), zap.String("key", l.conf.Key), zap.String("owner", l.conf.Owner))
}
