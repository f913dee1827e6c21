// Package hostfx wires an fx application into a Host: Container makes an fx
// application the Host's host.Container, and Provide, Warmup, Hook, DrainHook and
// Check add entrypoints, warmup steps, hooks, drain hooks and readiness checks built
// by fx constructors. fx stays here, in the wiring: package host links no container
// and uses no reflection.
package hostfx

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/dig"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

// Container makes opts the Host's container (host.AppSpec.Container). The Host
// builds it in New — every constructor the groups below need runs then, no OnStart
// hook — and runs its OnStart hooks at host.StageOpenScope (pools open) and its
// OnStop hooks at host.StageCloseScope (pools close), each bounded as the budgets
// say. The application is supplied with:
//
//	*zap.Logger, *host.Shutdown, *hooks.Registry (to add drain hooks at startup),
//	Instance, *prometheus.Registry and prometheus.Registerer, trace.TracerProvider,
//	metric.MeterProvider, propagation.TextMapPropagator, fault.Reporter (nil when
//	the TelemetryConfig has none), host.PreStopFunc (Host.PreStop, for an admin
//	endpoint), *health.Monitor (Host.Monitor: readiness and every check, the
//	container's too)
//
// and its groups are collected: "entrypoints" (Provide), "warmups" (Warmup), "hooks"
// (Hook, DrainHook) and "checks" (Check).
//
// A graph error — a missing type, a cycle, a constructor of the wrong shape — and a
// constructor's own *fault.ConfigError make New fail with a *fault.ConfigError (exit
// 78); a constructor or invoke that fails for another reason (connection refused)
// makes New fail with a startup error (exit 1). Each error reads without fx's
// reflection frames, and is logged once, by the Host; fx's own events are logged at
// debug level through the Host's logger.
func Container(opts ...fx.Option) host.Container { return container(opts) }

type container []fx.Option

// Instance is this replica's identity (AppSpec.Instance, INSTANCE_ID, or
// hostname-pid), as the container sees it: the owner in locks, the name in logs.
type Instance string

// hookRegistration is a hook or drain hook that arrives through the fx group
// "hooks"; see Hook and DrainHook.
type hookRegistration struct {
	Kind  hooks.Kind
	Hook  hooks.Hook
	Phase *hooks.DrainHook // set for a drain hook; Kind and Hook are then unused
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
	Entrypoints []host.Registration `group:"entrypoints"`
	Warmups     []host.Step         `group:"warmups"`
	Hooks       []hookRegistration  `group:"hooks"`
	Checks      []NamedCheck        `group:"checks"`
}

// Build builds the fx application, running its constructors but no OnStart hook,
// and adds the units of its groups to the Host.
func (c container) Build(b *host.Builder) (host.Scope, error) {
	h := b.Host()
	var units containerUnits
	app := fx.New(
		fx.WithLogger(func() fxevent.Logger {
			l := &fxevent.ZapLogger{Logger: h.Logger().Named("fx")}
			l.UseLogLevel(zapcore.DebugLevel) // fx's wiring events are noise at info
			// The Host logs every failure once, with its stage: fx saying it too
			// would log each twice.
			l.UseErrorLevel(zapcore.DebugLevel)
			return l
		}),
		fx.Supply(h.Logger(), h.Shutdown(), b.Lifecycle(), b.Registry(), Instance(h.Instance()), host.PreStopFunc(h.PreStop)),
		fx.Provide(
			func() prometheus.Registerer { return b.Registry() },
			func() trace.TracerProvider { return h.TracerProvider() },
			func() metric.MeterProvider { return h.MeterProvider() },
			func() propagation.TextMapPropagator { return h.Propagator() },
			func() fault.Reporter { return h.Reporter() },
			func(in monitorChecks) (*health.Monitor, error) {
				checks := make(map[string]health.Check, len(in.Checks))
				for _, c := range in.Checks {
					checks[c.Name] = c.Check
				}
				return b.Monitor(checks)
			},
		),
		fx.Options(c...),
		fx.Populate(&units),
	)
	if err := app.Err(); err != nil {
		return nil, classify(err)
	}
	b.Register(units.Entrypoints...)
	b.Warmup(units.Warmups...)
	for _, hr := range units.Hooks {
		if hr.Phase != nil {
			b.Lifecycle().AddDrainHook(*hr.Phase)
			continue
		}
		b.Lifecycle().Add(hr.Kind, hr.Hook)
	}
	slices.SortStableFunc(units.Checks, func(a, b NamedCheck) int { return cmp.Compare(a.Name, b.Name) })
	for _, c := range units.Checks {
		b.Check(c.Name, c.Check)
	}
	return scope{app}, nil
}

// scope is the built application: its OnStart and OnStop hooks.
type scope struct{ app *fx.App }

func (s scope) Open(ctx context.Context) error  { return s.app.Start(ctx) }
func (s scope) Close(ctx context.Context) error { return s.app.Stop(ctx) }

// classify turns an error of fx.New into what the Host reports: a constructor's own
// *fault.ConfigError as it is; a graph error (fx or dig's own: a missing type, a
// cycle, a bad constructor) as a *fault.ConfigError; a constructor's or invoke's own
// error as a startup failure that wraps it. The message leaves out the frames of the
// reflective wrappers this package builds.
func classify(err error) error {
	if _, ok := errors.AsType[*fault.ConfigError](err); ok {
		return err
	}
	msg := readable(err)
	root := dig.RootCause(err)
	if _, graph := errors.AsType[dig.Error](root); graph {
		return fault.Invalid("", "%s", msg)
	}
	return &buildError{msg: msg, err: root}
}

// buildError is a constructor's failure, with the readable chain of what needed it.
type buildError struct {
	msg string
	err error
}

func (e *buildError) Error() string { return e.msg }
func (e *buildError) Unwrap() error { return e.err }

// readable is err's message without the links of its chain that name this
// package's reflect.MakeFunc wrappers ("reflect".makeFuncStub): each such link only
// repeats what the next one says about the user's own constructor.
func readable(err error) string {
	var parts []string
	for e := err; e != nil; {
		next := errors.Unwrap(e)
		own := e.Error()
		if next != nil {
			own = strings.TrimSuffix(own, ": "+next.Error())
		}
		if !strings.Contains(own, "makeFuncStub") {
			parts = append(parts, own)
		}
		e = next
	}
	if len(parts) == 0 {
		return err.Error()
	}
	return strings.Join(parts, ": ")
}

// Provide adds an entrypoint built by an fx constructor to the service: r gives its
// registration — Order, NonEssential, GatesReadiness and Marks, as in
// host.AppSpec.Entrypoints (r.Entrypoint must be nil: ctor builds it) — and ctor takes any
// dependencies from the container and returns a value implementing
// entrypoint.Entrypoint, optionally with an error. The value is also provided as its
// own type, so other constructors can depend on it (a readiness check on a consumer,
// say).
func Provide(r host.Registration, ctor any) fx.Option {
	if r.Entrypoint != nil {
		return fx.Error(fault.Invalid("Registration.Entrypoint", "hostfx.Provide: must be nil, the constructor builds the entrypoint; got %T", r.Entrypoint))
	}
	tmpl := r
	ft := reflect.TypeOf(ctor)
	if ft == nil || ft.Kind() != reflect.Func || ft.NumOut() < 1 {
		return fx.Error(fault.Invalid("", "hostfx.Provide: constructor must be a func returning an entrypoint, got %T", ctor))
	}
	register := reflect.MakeFunc(
		reflect.FuncOf([]reflect.Type{ft.Out(0)}, []reflect.Type{reflect.TypeFor[host.Registration](), errorType}, false),
		func(args []reflect.Value) []reflect.Value {
			ep, ok := args[0].Interface().(entrypoint.Entrypoint)
			if !ok {
				err := fault.Invalid("", "hostfx.Provide: %s does not implement entrypoint.Entrypoint", ft.Out(0))
				return []reflect.Value{reflect.Zero(reflect.TypeFor[host.Registration]()), reflect.ValueOf(&err).Elem()}
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
		s, ok := v.(host.Step)
		if !ok {
			return nil, fault.Invalid("", "hostfx.Warmup: constructor returns %T, want host.Step", v)
		}
		return s, nil
	}, host.Step{})
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
			return nil, fault.Invalid("", "hostfx.Hook %q: constructor returns %T, want hooks.Func", name, v)
		}
		return hookRegistration{Kind: kind, Hook: hooks.Hook{Name: name, Run: fn, Marks: m}}, nil
	}, hookRegistration{})
}

// DrainHook adds a drain hook whose function is built by an fx constructor: p
// gives its Name, Order, MaxDuration and Marks (p.Run is ignored), and ctor takes
// dependencies from the container and returns the phase's Run — a
// func(ctx context.Context, allowed time.Duration) error — optionally with an
// error. The phase runs as one added to hooks.Registry.AddDrainHook does: after
// the drain delay, before the entrypoints drain, or ahead of the stop by PreStop.
func DrainHook(p hooks.DrainHook, ctor any) fx.Option {
	return provideInto("hooks", ctor, func(v any) (any, error) {
		run, ok := v.(func(context.Context, time.Duration) error)
		if !ok {
			return nil, fault.Invalid("", "hostfx.DrainHook %q: constructor returns %T, want func(context.Context, time.Duration) error", p.Name, v)
		}
		phase := p
		phase.Run = run
		return hookRegistration{Phase: &phase}, nil
	}, hookRegistration{})
}

// Check adds a readiness check built by an fx constructor: ctor takes dependencies
// from the container and returns a health.Check, optionally with an error.
func Check(name string, ctor any) fx.Option {
	return provideInto("checks", ctor, func(v any) (any, error) {
		c, ok := v.(health.Check)
		if !ok {
			return nil, fault.Invalid("", "hostfx.Check %q: constructor returns %T, want health.Check", name, v)
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
		return fx.Error(fault.Invalid("", "group %q: constructor must be a func returning a value and optionally an error, got %T", group, ctor))
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
