package leader

import (
	"cmp"
	"fmt"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
)

var _ entrypoint.DefaultsUser = (*Leadership)(nil)

// tracerName names the Leadership's tracer.
const tracerName = "github.com/servicewright/servicewright/leader"

// SetDefaults takes the Host's telemetry for what WithTelemetry did not give: its
// logger, its registry for the leadership metrics, its tracer provider (the
// "leadership.term" spans), its error reporter (for the panics of lead and Claim). It
// returns a metrics registration that fails (the Host refuses the entrypoint then),
// and does nothing once the Leadership is bound.
func (l *Leadership) SetDefaults(d entrypoint.Telemetry) error { return l.base.SetDefaults(d) }

// use takes t: the Base calls it from New with what WithTelemetry gave, and again from
// SetDefaults merged with the Host's. The metrics are registered once, with the
// first registry given.
func (l *Leadership) use(t entrypoint.Telemetry) error {
	l.log = l.logger(cmp.Or(t.Logger, zap.NewNop()))
	var tp trace.TracerProvider = noop.NewTracerProvider()
	if t.TracerProvider != nil {
		tp = t.TracerProvider
	}
	l.tracer = tp.Tracer(tracerName)
	l.reporter = t.Reporter
	if l.m == nil || (!l.registered && t.Registerer != nil) {
		m, err := newMetrics(t.Registerer)
		if err != nil {
			return fmt.Errorf("leadership %q: metrics: %w", l.conf.Name, err)
		}
		l.m, l.registered = m, t.Registerer != nil
	}
	return nil
}

// logger is base with the Leadership's fields.
func (l *Leadership) logger(base *zap.Logger) *zap.Logger {
	return base.With(zap.String("entrypoint", l.conf.Name), zap.String("key", l.conf.Key), zap.String("owner", l.conf.Owner))
}
