package admission

import (
	"cmp"
	"strconv"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// Defaults for the fields of Config left at their zero value (each field's doc
// states its value). defaultInitialLimit is also what an entrypoint's
// AdmissionLimit reports before any load, and the unloaded value the limit returns
// to once an overload is over.
const (
	defaultInitialLimit  = 20
	defaultMinLimit      = 1
	defaultMaxLimit      = 1000
	defaultWindow        = 100 * time.Millisecond
	defaultTolerance     = 1.5
	defaultProbeInterval = 30 * time.Second
	defaultMaxQueueDelay = 5 * time.Millisecond
)

// The environment variables that override Config's fields (see Config.FromEnv);
// each field's doc names its own.
const (
	envOff           = "SW_ADMISSION_OFF"
	envMinLimit      = "SW_ADMISSION_MIN_LIMIT"
	envMaxLimit      = "SW_ADMISSION_MAX_LIMIT"
	envWindow        = "SW_ADMISSION_WINDOW"
	envProbeInterval = "SW_ADMISSION_PROBE_INTERVAL"
	envMaxQueueDelay = "SW_ADMISSION_MAX_QUEUE_DELAY"
)

// Config bounds a Limiter. Every zero field takes the default its doc states, so the
// zero Config is protection on with the defaults. Every other value must lie within
// the bounds its doc states, which keep the controller meaningful: New refuses one
// outside (it never clamps), each as a problem of one *fault.ConfigError naming the
// field and its variable.
type Config struct {
	// Off turns overload protection off: nothing is refused for overload, only while
	// draining. Env SW_ADMISSION_OFF (a Go bool: 1, true, 0, false).
	Off bool
	// MinLimit is the floor of the limit: however slow the service gets, this many
	// ordinary units are admitted at once. Default 1; within [1, MaxLimit]. Env
	// SW_ADMISSION_MIN_LIMIT.
	MinLimit int
	// MaxLimit is the ceiling of the limit. Default 1000; within [1, 100000].
	// Env SW_ADMISSION_MAX_LIMIT.
	MaxLimit int
	// InitialLimit is the limit before the first measurement, clamped to the bounds.
	// Default 20; within [1, 100000].
	InitialLimit int
	// Window is the shortest span over which latency is averaged before the limit
	// moves; a window also waits for enough samples. Default 100ms; within
	// [10ms, 10s]: a shorter window's mean follows noise, and a longer one reacts
	// only after the clients have timed out. Env SW_ADMISSION_WINDOW.
	Window time.Duration
	// Tolerance is how much slower than the no-load latency the service may answer
	// before the limit falls: 1.5 lets latency grow by half. Default 1.5; within
	// [1, 10].
	Tolerance float64
	// ProbeInterval is how often, while it sheds, the Limiter drops to MinLimit for
	// two windows to measure the no-load latency afresh. Default 30s; within
	// [1s, 1h] and at least ten windows.
	// Env SW_ADMISSION_PROBE_INTERVAL.
	ProbeInterval time.Duration
	// MaxQueueDelay is how long, on average over a window, runnable goroutines may
	// wait for a CPU (the Go scheduler's latency) before the process counts as
	// saturated and the Limiter admits an ordinary unit under the limit only while
	// the run queue is short (see Limiter). A CPU-bound handler queues there,
	// before any Gate sees it. Default 5ms: the scheduler's time slice is 10ms, so a
	// goroutine that finds a CPU-bound one running may wait half of that with no
	// queue at all. Within [1ms, 1s].
	// Env SW_ADMISSION_MAX_QUEUE_DELAY.
	MaxQueueDelay time.Duration
}

// FromEnv returns cfg with the fields that lookup (os.LookupEnv in production)
// overrides. A malformed value is a problem naming the field and the variable.
func (cfg Config) FromEnv(lookup func(string) (string, bool)) (Config, error) {
	var l fault.Problems
	if v, ok := lookup(envOff); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			l.AddEnvf("Off", envOff, "%q is not a bool", v)
		}
		cfg.Off = b
	}
	ints := []struct {
		env, field string
		v          *int
	}{{envMinLimit, "MinLimit", &cfg.MinLimit}, {envMaxLimit, "MaxLimit", &cfg.MaxLimit}}
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
	}{{envWindow, "Window", &cfg.Window}, {envProbeInterval, "ProbeInterval", &cfg.ProbeInterval},
		{envMaxQueueDelay, "MaxQueueDelay", &cfg.MaxQueueDelay}}
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

// The floors and ceilings of Config's fields (each field's doc states them):
// outside them the controller no longer means what it says. A value outside is refused, never
// clamped, so that a typo does not silently switch a protection off.
const (
	// ceilingLimit is the highest MaxLimit (and MinLimit, InitialLimit): far beyond
	// any process's useful concurrency, and within the Gate's count.
	ceilingLimit = 100_000
	// floorWindow is the shortest Window: a window must span several of the
	// scheduler's time slices and hold enough samples for a mean, or the estimate
	// follows noise (at 10µs it reached NaN).
	floorWindow = 10 * time.Millisecond
	// ceilingWindow is the longest Window: beyond it the limit reacts to an
	// overload only after the clients have timed out.
	ceilingWindow = 10 * time.Second
	// floorProbeInterval is the shortest ProbeInterval, and it must also be at
	// least probeWindows windows: a probe holds the limit at MinLimit for two
	// windows, and probing more often than one window in ten would shed for the
	// probe's sake.
	floorProbeInterval = time.Second
	// ceilingProbeInterval is the longest ProbeInterval: a service that became
	// slower for good is re-measured at least this often.
	ceilingProbeInterval = time.Hour
	// floorMaxQueueDelay is the shortest MaxQueueDelay: a goroutine that finds a CPU
	// busy waits some hundreds of microseconds at normal load, so a shorter bound
	// counts a healthy process as saturated (at 1ns, 95% of requests were shed).
	floorMaxQueueDelay = time.Millisecond
	// ceilingMaxQueueDelay is the longest MaxQueueDelay: beyond it a CPU-bound
	// process is never found saturated before its clients give up.
	ceilingMaxQueueDelay = time.Second
	// floorTolerance and ceilingTolerance bound Tolerance: under 1 the limit falls
	// at the no-load latency itself; above 10 latency may grow tenfold before it
	// falls at all.
	floorTolerance   = 1.0
	ceilingTolerance = 10.0
)

// probeWindows is how many windows ProbeInterval must span at least.
const probeWindows = 10

// resolve fills in the defaults and records every problem in l, each naming its
// field and the variable that can set it: a value below its floor or above its
// ceiling (see ceilingLimit and the others), or bounds that do not fit together.
func (cfg Config) resolve(l *fault.Problems) Config {
	// A zero field takes its default.
	cfg.MinLimit = cmp.Or(cfg.MinLimit, defaultMinLimit)
	cfg.MaxLimit = cmp.Or(cfg.MaxLimit, defaultMaxLimit)
	cfg.InitialLimit = cmp.Or(cfg.InitialLimit, defaultInitialLimit)
	cfg.Window = cmp.Or(cfg.Window, defaultWindow)
	cfg.Tolerance = cmp.Or(cfg.Tolerance, defaultTolerance)
	cfg.ProbeInterval = cmp.Or(cfg.ProbeInterval, defaultProbeInterval)
	cfg.MaxQueueDelay = cmp.Or(cfg.MaxQueueDelay, defaultMaxQueueDelay)
	limits := true
	for _, b := range []struct {
		field, env string
		v          int
	}{{"MinLimit", envMinLimit, cfg.MinLimit}, {"MaxLimit", envMaxLimit, cfg.MaxLimit}, {"InitialLimit", "", cfg.InitialLimit}} {
		if b.v < 1 || b.v > ceilingLimit {
			l.AddEnvf(b.field, b.env, "must be within [1, %d], got %d", ceilingLimit, b.v)
			limits = false
		}
	}
	if limits && cfg.MinLimit > cfg.MaxLimit {
		l.AddEnvf("MinLimit", envMinLimit, "must not exceed MaxLimit %d (%s), got %d", cfg.MaxLimit, envMaxLimit, cfg.MinLimit)
	}
	cfg.InitialLimit = max(cfg.MinLimit, min(cfg.MaxLimit, cfg.InitialLimit))
	for _, b := range []struct {
		field, env string
		v, lo, hi  time.Duration
	}{
		{"Window", envWindow, cfg.Window, floorWindow, ceilingWindow},
		{"ProbeInterval", envProbeInterval, cfg.ProbeInterval, floorProbeInterval, ceilingProbeInterval},
		{"MaxQueueDelay", envMaxQueueDelay, cfg.MaxQueueDelay, floorMaxQueueDelay, ceilingMaxQueueDelay},
	} {
		if b.v < b.lo || b.v > b.hi {
			l.AddEnvf(b.field, b.env, "must be within [%v, %v], got %v", b.lo, b.hi, b.v)
		}
	}
	if w := cfg.Window; w >= floorWindow && w <= ceilingWindow && cfg.ProbeInterval >= floorProbeInterval && cfg.ProbeInterval < probeWindows*w {
		l.AddEnvf("ProbeInterval", envProbeInterval, "must be at least %d windows (Window %v, %s), got %v", probeWindows, w, envWindow, cfg.ProbeInterval)
	}
	if !(cfg.Tolerance >= floorTolerance && cfg.Tolerance <= ceilingTolerance) { // NaN fails both
		l.Addf("Tolerance", "must be within [%v, %v], got %v", floorTolerance, ceilingTolerance, cfg.Tolerance)
	}
	return cfg
}
