package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

func env(kv ...string) host.Option {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return host.WithEnv(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

func quiet() host.TelemetryConfig { return host.TelemetryConfig{Logger: zap.NewNop()} }

func TestConfigError(t *testing.T) {
	t.Run("every problem is listed at once with its field, and nothing starts", func(t *testing.T) {
		j := &journal{}
		reg := &hooks.Registry{}
		reg.AddDrainHook(hooks.DrainHook{MaxDuration: -time.Second, Run: func(context.Context, time.Duration) error { return nil }})
		reg.AddPreStart("", nil)
		spec := host.AppSpec{
			ServiceName: "orders",
			Entrypoints: []host.Registration{
				{Entrypoint: newFake("http", j)}, {Entrypoint: newFake("http", j)}, {Entrypoint: nil},
			},
			Lifecycle: reg,
			Budgets:   host.Budgets{DrainGrace: -time.Second, StepTimeout: -1},
			Telemetry: quiet(),
		}
		h, err := host.New(spec, env("SW_DRAIN_DELAY", "-1s", "SW_DEADLINE", "soon", "TERMINATION_GRACE_PERIOD", "thirty"))
		if h != nil || host.ExitCode(err) != host.ExitConfig {
			t.Fatalf("New = %v, %v; want a ConfigError", h, err)
		}
		var ce *fault.ConfigError
		if !errors.As(err, &ce) {
			t.Fatal(err)
		}
		fields := map[string]bool{}
		for _, p := range ce.Problems {
			fields[p.Field] = true
			if p.Variable != "" {
				fields[p.Variable+" "+p.Field] = true
			}
		}
		for _, want := range []string{
			"SW_DRAIN_DELAY Budgets.DrainDelay", "SW_DEADLINE Budgets.Deadline",
			"TERMINATION_GRACE_PERIOD Budgets.TerminationGracePeriod", "Budgets.DrainGrace", "Budgets.StepTimeout",
			`Entrypoints["http"]`, "Entrypoints[2]", "Lifecycle.DrainHooks[0]", "Lifecycle.DrainHooks[0].MaxDuration",
			"Lifecycle.pre_start[0]",
		} {
			if !fields[want] {
				t.Errorf("no problem for %s in %v", want, ce)
			}
		}
		if len(j.get()) != 0 {
			t.Errorf("something ran: %v", j.get())
		}
	})

	t.Run("fleet posture refuses an unguarded mutating step, naming it", func(t *testing.T) {
		_, err := host.New(host.AppSpec{
			ServiceName: "orders", Profile: fleet.Fleet, Telemetry: quiet(),
			Warmups: []host.Step{{Name: "migrate", Start: func(context.Context) error { return nil },
				Marks: fleet.Marks{MutatesSharedState: true}}},
		}, env())
		if err == nil || !strings.Contains(err.Error(), `Warmups["migrate"]`) {
			t.Fatalf("New = %v", err)
		}
	})

	t.Run("the serverless profile refuses a unit that needs a long-running process", func(t *testing.T) {
		_, err := host.New(host.AppSpec{
			ServiceName: "orders", Profile: fleet.Serverless, Telemetry: quiet(),
			Entrypoints: []host.Registration{{Entrypoint: newFake("leadership:digest", &journal{}), Marks: fleet.Marks{RequiresLongRunning: true}}},
		}, env())
		if host.ExitCode(err) != host.ExitConfig || !strings.Contains(err.Error(), `Entrypoints["leadership:digest"]`) {
			t.Fatalf("New = %v", err)
		}
	})

	t.Run("env overrides apply, seconds or durations", func(t *testing.T) {
		h, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet(), Probes: probesOff()},
			env("SW_DRAIN_DELAY", "5s", "TERMINATION_GRACE_PERIOD", "45", "SW_STEP_TIMEOUT", "750ms"))
		if err != nil {
			t.Fatal(err)
		}
		b := h.Budgets()
		if b.DrainDelay != 5*time.Second || b.TerminationGracePeriod != 45*time.Second || b.StepTimeout != 750*time.Millisecond ||
			b.DrainGrace != 10*time.Second {
			t.Errorf("budgets = %+v", b)
		}
	})
}

func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&fault.ConfigError{}, 78},
		{errors.New("x"), 1},
		{host.ErrShutdownTimeout, 1},
		{&host.EntrypointError{Entrypoint: "a", Err: errors.New("x")}, 1},
	} {
		if got := host.ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func probesOff() health.ListenerConfig { return health.ListenerConfig{Disabled: true} }

func TestBudgetWarnings(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	h, err := host.New(host.AppSpec{
		ServiceName: "x", Probes: probesOff(), Telemetry: host.TelemetryConfig{Logger: zap.New(core)},
		Entrypoints: []host.Registration{{Entrypoint: newFake("a", &journal{})}},
	}, env("TERMINATION_GRACE_PERIOD", "10", "KUBERNETES_SERVICE_HOST", "10.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterMessage("shutdown budget").Len(); n != 0 {
		t.Errorf("New logged %d budget lines; the spec is final only at Run", n)
	}
	runStopped(t, h)
	budget := logs.FilterMessage("shutdown budget").All()
	if len(budget) != 1 {
		t.Fatalf("no shutdown budget line: %v", logs.All())
	}
	fields := budget[0].ContextMap()
	for _, f := range []string{"worst_case", "drain_delay", "drain", "stop", "flush", "termination_grace_period"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("shutdown budget lacks %s: %v", f, fields)
		}
	}
	if logs.FilterMessageSnippet("does not fit the termination grace period").Len() != 1 {
		t.Error("no warning that 21s does not fit 10s")
	}
	if logs.FilterMessageSnippet("Kubernetes with DrainDelay 0").Len() != 1 {
		t.Error("no warning about DrainDelay 0 under Kubernetes")
	}
}

func TestLogLevelError(t *testing.T) {
	_, err := host.New(host.AppSpec{ServiceName: "x", Probes: probesOff()}, env("SW_LOG_LEVEL", "verbose"))
	var ce *fault.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || (ce.Problems[0].Field != "Telemetry.Logger" || ce.Problems[0].Variable != "SW_LOG_LEVEL") || host.ExitCode(err) != host.ExitConfig {
		t.Fatalf("New = %v, want a ConfigError naming Telemetry.Logger and SW_LOG_LEVEL", err)
	}
}

func TestCheckTimeoutFromEnv(t *testing.T) {
	for _, tc := range []struct {
		value, want string // want: a substring of the problem, or "" for none
	}{
		{"0s", "SW_CHECK_TIMEOUT (Probes.CheckTimeout): must be positive, got 0s"},
		{"-1s", "SW_CHECK_TIMEOUT (Probes.CheckTimeout): must be positive"},
		{"soon", "SW_CHECK_TIMEOUT (Probes.CheckTimeout):"},
		{"1000000h", "SW_CHECK_TIMEOUT (Probes.CheckTimeout):"},
		{"250ms", ""},
	} {
		t.Run(tc.value, func(t *testing.T) {
			h, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet(), Probes: health.ListenerConfig{Addr: "127.0.0.1:0"}}, env("SW_CHECK_TIMEOUT", tc.value))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New = %v, want no error", err)
				}
				return
			}
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want a ConfigError with %q", h, err, tc.want)
			}
		})
	}
}

// runStopped runs h with its stop already requested: startup logs the budget and
// goes straight to cleanup.
func runStopped(t *testing.T, h *host.Host) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Run(ctx); err != nil {
		t.Fatalf("Run with the stop requested: %v", err)
	}
}

// slowToStop is a fake entrypoint whose work takes need to end once Drain asks.
type slowToStop struct {
	*fake
	need time.Duration
}

func (s slowToStop) DrainTime() time.Duration { return s.need }

func TestBudgetProblemsNameTheVariable(t *testing.T) {
	ep := slowToStop{newFake("leader", &journal{}), 8 * time.Second}
	for _, tc := range []struct {
		name     string
		spec     host.Budgets
		kv       []string
		variable string // the Problem's Variable
		text     string // in the message
	}{
		{"DrainGrace from the spec", host.Budgets{DrainGrace: 5 * time.Second}, nil, "", "Budgets.DrainGrace (5s)"},
		{"DrainGrace from SW_DRAIN_GRACE", host.Budgets{}, []string{"SW_DRAIN_GRACE", "5s"}, "SW_DRAIN_GRACE",
			"Budgets.DrainGrace (5s, set by SW_DRAIN_GRACE)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet(), Probes: probesOff(), Budgets: tc.spec,
				Entrypoints: []host.Registration{{Entrypoint: ep}}}, env(tc.kv...))
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || len(ce.Problems) != 1 || ce.Problems[0].Field != `Entrypoints["leader"]` ||
				ce.Problems[0].Variable != tc.variable || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("New = %v, want one problem of the leader naming %q, variable %q", err, tc.text, tc.variable)
			}
		})
	}
	t.Run("a malformed variable names the field it sets", func(t *testing.T) {
		_, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet(), Probes: probesOff()},
			env("SW_STEP_TIMEOUT", "soon", "TERMINATION_GRACE_PERIOD", "-5"))
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || len(ce.Problems) != 2 {
			t.Fatalf("New = %v, want two problems", err)
		}
		for _, p := range ce.Problems {
			if p.Field != "Budgets."+map[string]string{"SW_STEP_TIMEOUT": "StepTimeout", "TERMINATION_GRACE_PERIOD": "TerminationGracePeriod"}[p.Variable] {
				t.Errorf("problem %+v: want the variable and the Budgets field it sets", p)
			}
		}
	})
}
