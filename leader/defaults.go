package leader

import (
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

// SetDefaults takes the Host's telemetry for what no option gave: its logger unless
// WithLogger, its registry for the leadership metrics unless WithRegisterer, its
// tracer provider (the "leadership.term" spans) unless WithTracerProvider. A
// registration that fails is logged, and the metrics are then kept unregistered.
// It does nothing once Serve has started the campaign.
func (l *Leadership) SetDefaults(d entrypoint.Defaults) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return
	}
	if l.own.log == nil && d.Logger != nil {
		l.log = l.logger(d.Logger)
	}
	if l.own.tracer == nil && d.TracerProvider != nil {
		l.tracer = d.TracerProvider.Tracer(tracerName)
	}
	if l.own.reg == nil && d.Registerer != nil {
		m, err := newMetrics(d.Registerer)
		if err != nil {
			l.log.Error("leadership metrics not registered with the Host's registry", zap.Error(err))
			return
		}
		l.m = m
	}
}

// logger is base with the Leadership's fields.
func (l *Leadership) logger(base *zap.Logger) *zap.Logger {
	return base.With(zap.String("entrypoint", l.conf.Name), zap.String("key", l.conf.Key), zap.String("owner", l.conf.Owner))
}
