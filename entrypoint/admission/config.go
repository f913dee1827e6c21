package admission

import (
	"cmp"
	"strconv"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// Defaults for the fields of Config left at their zero value.
const (
	DefaultMinLimit      = 1
	DefaultMaxLimit      = 1000
	DefaultInitialLimit  = 20
	DefaultWindow        = 100 * time.Millisecond
	DefaultTolerance     = 1.5
	DefaultProbeInterval = 30 * time.Second
	DefaultMaxQueueDelay = 5 * time.Millisecond
)

// The environment variables that override Config's fields (see Config.FromEnv).
const (
	EnvOff           = "SW_ADMISSION_OFF"
	EnvMinLimit      = "SW_ADMISSION_MIN_LIMIT"
	EnvMaxLimit      = "SW_ADMISSION_MAX_LIMIT"
	EnvWindow        = "SW_ADMISSION_WINDOW"
	EnvProbeInterval = "SW_ADMISSION_PROBE_INTERVAL"
	EnvMaxQueueDelay = "SW_ADMISSION_MAX_QUEUE_DELAY"
)

// Config bounds a Limiter. Every zero field takes the default named after it, so the
// zero Config is protection on with the defaults.
type Config struct {
	// Off turns overload protection off: nothing is refused for overload, only while
	// draining. Env SW_ADMISSION_OFF (a Go bool: 1, true, 0, false).
	Off bool
	// MinLimit is the floor of the limit: however slow the service gets, this many
	// ordinary units are admitted at once. Default 1. Env SW_ADMISSION_MIN_LIMIT.
	MinLimit int
	// MaxLimit is the ceiling of the limit. Default 1000. Env SW_ADMISSION_MAX_LIMIT.
	MaxLimit int
	// InitialLimit is the limit before the first measurement, clamped to the bounds.
	// Default 20.
	InitialLimit int
	// Window is the shortest span over which latency is averaged before the limit
	// moves; a window also waits for enough samples. Default 100ms. Env
	// SW_ADMISSION_WINDOW.
	Window time.Duration
	// Tolerance is how much slower than the no-load latency the service may answer
	// before the limit falls: 1.5 lets latency grow by half. Must be at least 1.
	// Default 1.5.
	Tolerance float64
	// ProbeInterval is how often, while it sheds, the Limiter drops to MinLimit for
	// two windows to measure the no-load latency afresh. Default 30s. Env
	// SW_ADMISSION_PROBE_INTERVAL.
	ProbeInterval time.Duration
	// MaxQueueDelay is how long, on average over a window, runnable goroutines may
	// wait for a CPU (the Go scheduler's latency) before the process counts as
	// saturated and the Limiter admits an ordinary unit under the limit only while
	// the run queue is short (see Limiter). A CPU-bound handler queues there,
	// before any Gate sees it. Default 5ms: the scheduler's time slice is 10ms, so a
	// goroutine that finds a CPU-bound one running may wait half of that with no
	// queue at all. Env SW_ADMISSION_MAX_QUEUE_DELAY.
	MaxQueueDelay time.Duration
}

// FromEnv returns cfg with the fields that lookup (os.LookupEnv in production)
// overrides. A malformed value is a problem naming the field and the variable.
func (cfg Config) FromEnv(lookup func(string) (string, bool)) (Config, error) {
	var l fault.Problems
	if v, ok := lookup(EnvOff); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			l.AddEnvf("Off", EnvOff, "%q is not a bool", v)
		}
		cfg.Off = b
	}
	ints := []struct {
		env, field string
		v          *int
	}{{EnvMinLimit, "MinLimit", &cfg.MinLimit}, {EnvMaxLimit, "MaxLimit", &cfg.MaxLimit}}
	for _, e := range ints {
		if v, ok := lookup(e.env); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				l.AddEnvf(e.field, e.env, "%q is not an integer", v)
			}
			*e.v = n
		}
	}
	durs := []struct {
		env, field string
		v          *time.Duration
	}{{EnvWindow, "Window", &cfg.Window}, {EnvProbeInterval, "ProbeInterval", &cfg.ProbeInterval},
		{EnvMaxQueueDelay, "MaxQueueDelay", &cfg.MaxQueueDelay}}
	for _, e := range durs {
		if v, ok := lookup(e.env); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				l.AddEnvf(e.field, e.env, "%q is not a duration", v)
			}
			*e.v = d
		}
	}
	return cfg, l.Err()
}

// resolve fills in the defaults and records every problem in l, each naming its
// field and the variable that can set it.
func (cfg Config) resolve(l *fault.Problems) Config {
	// A zero field takes its default.
	cfg.MinLimit = cmp.Or(cfg.MinLimit, DefaultMinLimit)
	cfg.MaxLimit = cmp.Or(cfg.MaxLimit, DefaultMaxLimit)
	cfg.InitialLimit = cmp.Or(cfg.InitialLimit, DefaultInitialLimit)
	cfg.Window = cmp.Or(cfg.Window, DefaultWindow)
	cfg.Tolerance = cmp.Or(cfg.Tolerance, DefaultTolerance)
	cfg.ProbeInterval = cmp.Or(cfg.ProbeInterval, DefaultProbeInterval)
	cfg.MaxQueueDelay = cmp.Or(cfg.MaxQueueDelay, DefaultMaxQueueDelay)
	switch {
	case cfg.MinLimit < 0:
		l.AddEnvf("MinLimit", EnvMinLimit, "must be positive, got %d", cfg.MinLimit)
	case cfg.MaxLimit < 0:
		l.AddEnvf("MaxLimit", EnvMaxLimit, "must be positive, got %d", cfg.MaxLimit)
	case cfg.MinLimit > cfg.MaxLimit:
		l.AddEnvf("MinLimit", EnvMinLimit, "must not exceed MaxLimit %d (%s), got %d", cfg.MaxLimit, EnvMaxLimit, cfg.MinLimit)
	}
	if cfg.InitialLimit < 0 {
		l.Addf("InitialLimit", "must be positive, got %d", cfg.InitialLimit)
	}
	cfg.InitialLimit = max(cfg.MinLimit, min(cfg.MaxLimit, cfg.InitialLimit))
	if cfg.Window < 0 {
		l.AddEnvf("Window", EnvWindow, "must be positive, got %v", cfg.Window)
	}
	if cfg.ProbeInterval < 0 {
		l.AddEnvf("ProbeInterval", EnvProbeInterval, "must be positive, got %v", cfg.ProbeInterval)
	}
	if cfg.MaxQueueDelay < 0 {
		l.AddEnvf("MaxQueueDelay", EnvMaxQueueDelay, "must be positive, got %v", cfg.MaxQueueDelay)
	}
	if cfg.Tolerance < 1 {
		l.Addf("Tolerance", "must be at least 1, got %v", cfg.Tolerance)
	}
	return cfg
}
