package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
)

// The container: AppSpec.Container is an fx application. Its OnStart hooks run at
// StageOpenScope (pools open) and its OnStop hooks at StageCloseScope (pools close),
// each bounded as the budgets say. The Host supplies it with:
//
//	*zap.Logger, *Shutdown, *hooks.Registry (to add drain phases at startup), Instance,
//	*prometheus.Registry and prometheus.Registerer, trace.TracerProvider,
//	metric.MeterProvider, propagation.TextMapPropagator, fault.Reporter (nil when
//	TelemetryConfig has none), PreStopFunc (Host.PreStop, for an admin endpoint),
//	*health.Monitor (Host.Monitor: readiness and every check, the container's too)
//
// and collects the fx groups below. fx stays here, in the wiring: the Host's state
// machine does not use reflection.

// Instance is this replica's identity (AppSpec.Instance, INSTANCE_ID, or
// hostname-pid), as the container sees it: the owner in locks, the name in logs.
type Instance string

// hookRegistration is a hook that arrives through the fx group "hooks"; see Hook.
type hookRegistration struct {
	Kind hooks.Kind
	Hook hooks.Hook
}

// NamedCheck is a readiness check that arrives through the fx group "checks"; see Check.
type NamedCheck struct {
	Name  string
	Check health.Check
}

// monitorChecks is what the container's *health.Monitor depends on: its checks.
type monitorChecks struct {
	fx.In
	Checks []NamedCheck `group:"checks"`
}

type containerUnits struct {
	fx.In
	Entrypoints []Registration     `group:"entrypoints"`
	Warmups     []Step             `group:"warmups"`
	Hooks       []hookRegistration `group:"hooks"`
	Checks      []NamedCheck       `group:"checks"`
}

// buildContainer builds the fx application, running its constructors but no OnStart
// hook, and merges the units of its groups into the Host's.
func (h *Host) buildContainer(l *fault.Problems) {
	var units containerUnits
	app := fx.New(
		fx.WithLogger(func() fxevent.Logger {
			l := &fxevent.ZapLogger{Logger: h.log.Named("fx")}
			l.UseLogLevel(zapcore.DebugLevel) // fx's wiring events are noise at info
			return l
		}),
		fx.Supply(h.log, h.shutdown, h.lifecycle, h.tel.reg, Instance(h.instance), PreStopFunc(h.PreStop)),
		fx.Provide(
			func() prometheus.Registerer { return h.tel.reg },
			func() trace.TracerProvider { return h.tel.tp },
			func() metric.MeterProvider { return h.tel.mp },
			func() propagation.TextMapPropagator { return h.tel.prop },
			func() fault.Reporter { return h.tel.reporter },
			func(in monitorChecks) (*health.Monitor, error) { return h.buildMonitor(in.Checks) },
		),
		h.spec.Container,
		fx.Populate(&units),
	)
	if err := app.Err(); err != nil {
		// A constructor's own ConfigError keeps its fields; a wiring error is one problem.
		var ce *fault.ConfigError
		if errors.As(err, &ce) {
			l.Merge("Container", ce)
		} else {
			l.Addf("Container", "%v", err)
		}
		return
	}
	h.app = app
	h.regs = append(h.regs, units.Entrypoints...)
	h.steps = append(h.steps, units.Warmups...)
	for _, hr := range units.Hooks {
		h.lifecycle.Add(hr.Kind, hr.Hook)
	}
	slices.SortStableFunc(units.Checks, func(a, b NamedCheck) int { return cmp.Compare(a.Name, b.Name) })
	for _, c := range units.Checks {
		if _, dup := h.checks[c.Name]; dup {
			l.Addf(fmt.Sprintf("Checks[%q]", c.Name), "name is used by more than one check")
			continue
		}
		h.checks[c.Name] = c.Check
	}
}

// ProvideOption adjusts a registration made with Provide.
type ProvideOption func(*Registration)

// NonEssential marks the entrypoint as one whose failure does not stop the service.
func NonEssential() ProvideOption { return func(r *Registration) { r.NonEssential = true } }

// WithMarks adds fleet marks to those the entrypoint declares itself; see
// Registration.Marks.
func WithMarks(m fleet.Marks) ProvideOption { return func(r *Registration) { r.Marks = m } }

// Provide adds an entrypoint built by an fx constructor to the service, bound at the
// given order. ctor takes any dependencies from the container and returns a value
// implementing entrypoint.Entrypoint, optionally with an error. The value is also
// provided as its own type, so other constructors can depend on it (a readiness
// check on a consumer, say).
func Provide(ctor any, order int, opts ...ProvideOption) fx.Option {
	tmpl := Registration{Order: order}
	for _, o := range opts {
		o(&tmpl)
	}
	ft := reflect.TypeOf(ctor)
	if ft == nil || ft.Kind() != reflect.Func || ft.NumOut() < 1 {
		return fx.Error(fmt.Errorf("host.Provide: constructor must be a func returning an entrypoint, got %T", ctor))
	}
	register := reflect.MakeFunc(
		reflect.FuncOf([]reflect.Type{ft.Out(0)}, []reflect.Type{reflect.TypeFor[Registration](), errorType}, false),
		func(args []reflect.Value) []reflect.Value {
			ep, ok := args[0].Interface().(entrypoint.Entrypoint)
			if !ok {
				err := fmt.Errorf("host.Provide: %s does not implement entrypoint.Entrypoint", ft.Out(0))
				return []reflect.Value{reflect.Zero(reflect.TypeFor[Registration]()), reflect.ValueOf(&err).Elem()}
			}
			r := tmpl
			r.Entrypoint = ep
			return []reflect.Value{reflect.ValueOf(r), reflect.Zero(errorType)}
		})
	return fx.Options(
		fx.Provide(ctor),
		fx.Provide(fx.Annotate(register.Interface(), fx.ResultTags(`group:"entrypoints"`))),
	)
}

// Warmup adds a warmup step built by an fx constructor: ctor takes dependencies
// from the container and returns a Step, optionally with an error.
func Warmup(ctor any) fx.Option {
	return provideInto("warmups", ctor, func(v any) (any, error) {
		s, ok := v.(Step)
		if !ok {
			return nil, fmt.Errorf("host.Warmup: constructor returns %T, want host.Step", v)
		}
		return s, nil
	}, Step{})
}

// Hook adds a hook of the given kind whose function is built by an fx constructor:
// ctor takes dependencies from the container and returns a hooks.Func (or a
// func(context.Context) error), optionally with an error.
func Hook(kind hooks.Kind, name string, ctor any, marks ...fleet.Marks) fx.Option {
	var m fleet.Marks
	if len(marks) > 0 {
		m = marks[0]
	}
	return provideInto("hooks", ctor, func(v any) (any, error) {
		var fn hooks.Func
		switch f := v.(type) {
		case hooks.Func:
			fn = f
		case func(context.Context) error:
			fn = f
		default:
			return nil, fmt.Errorf("host.Hook %q: constructor returns %T, want hooks.Func", name, v)
		}
		return hookRegistration{Kind: kind, Hook: hooks.Hook{Name: name, Run: fn, Marks: m}}, nil
	}, hookRegistration{})
}

// Check adds a readiness check built by an fx constructor: ctor takes dependencies
// from the container and returns a health.Check, optionally with an error.
func Check(name string, ctor any) fx.Option {
	return provideInto("checks", ctor, func(v any) (any, error) {
		c, ok := v.(health.Check)
		if !ok {
			return nil, fmt.Errorf("host.Check %q: constructor returns %T, want health.Check", name, v)
		}
		return NamedCheck{Name: name, Check: c}, nil
	}, NamedCheck{})
}

var errorType = reflect.TypeFor[error]()

// provideInto provides, into the fx value group named group, the result of ctor
// converted by conv. The wrapper keeps ctor's parameters, so fx injects them as it
// would into ctor itself (fx.In structs included).
func provideInto(group string, ctor any, conv func(any) (any, error), out any) fx.Option {
	fv := reflect.ValueOf(ctor)
	ft := fv.Type()
	if ft.Kind() != reflect.Func || ft.IsVariadic() || ft.NumOut() < 1 || ft.NumOut() > 2 ||
		(ft.NumOut() == 2 && ft.Out(1) != errorType) {
		return fx.Error(fmt.Errorf("group %q: constructor must be a func returning a value and optionally an error, got %T", group, ctor))
	}
	in := make([]reflect.Type, ft.NumIn())
	for i := range in {
		in[i] = ft.In(i)
	}
	outT := reflect.TypeOf(out)
	wt := reflect.FuncOf(in, []reflect.Type{outT, errorType}, false)
	wrapper := reflect.MakeFunc(wt, func(args []reflect.Value) []reflect.Value {
		res := fv.Call(args)
		fail := func(err error) []reflect.Value {
			return []reflect.Value{reflect.Zero(outT), reflect.ValueOf(&err).Elem()}
		}
		if len(res) == 2 && !res[1].IsNil() {
			return fail(res[1].Interface().(error))
		}
		v, err := conv(res[0].Interface())
		if err != nil {
			return fail(err)
		}
		return []reflect.Value{reflect.ValueOf(v), reflect.Zero(errorType)}
	})
	return fx.Provide(fx.Annotate(wrapper.Interface(), fx.ResultTags(`group:"`+group+`"`)))
}
