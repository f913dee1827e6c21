package cronentry

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// schedule gives a job's ticks.
type schedule interface {
	// next returns the first tick strictly after t, or the zero time when there is
	// none within five years.
	next(t time.Time) time.Time
}

// cronSchedule is a parsed cron expression read in loc. robfig/cron's own scheduler
// is not used: ours must stop taking ticks at Drain and run in virtual time.
type cronSchedule struct {
	spec *cron.SpecSchedule
	loc  *time.Location
}

func (c cronSchedule) next(t time.Time) time.Time { return c.spec.Next(t.In(c.loc)) }

// every ticks at the multiples of d since the Unix epoch. Anchoring at the epoch
// rather than at start-up is what makes replicas started at different moments agree
// on their ticks.
type every struct {
	d   time.Duration
	loc *time.Location
}

func (e every) next(t time.Time) time.Time {
	ns, d := t.UnixNano(), int64(e.d)
	r := ns % d
	if r < 0 {
		r += d
	}
	return time.Unix(0, ns-r+d).In(e.loc)
}

// parsed is a Schedule string as parseSchedule understood it.
type parsed struct {
	sched    schedule
	interval time.Duration // for @every; 0 for a cron expression
	zoned    bool          // the expression carried a CRON_TZ= or TZ= prefix
}

// parseSchedule parses a cron expression with robfig/cron's parser: an optional
// seconds field, descriptors, and a CRON_TZ= or TZ= prefix. The prefix is taken off
// here, so that an unknown zone gets a plain message and a missing expression does
// not reach the parser (which slices past the end of "CRON_TZ=UTC"). Without a
// prefix the expression is read in loc, or UTC when loc is nil.
func parseSchedule(expr string, loc *time.Location) (parsed, error) {
	var p parsed
	expr = strings.TrimSpace(expr)
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		rest, ok := strings.CutPrefix(expr, prefix)
		if !ok {
			continue
		}
		zone, spec, _ := strings.Cut(rest, " ")
		if zone == "" {
			return p, fmt.Errorf("empty time zone in %q", expr)
		}
		z, err := time.LoadLocation(zone)
		if err != nil {
			return p, fmt.Errorf("unknown time zone %q", zone)
		}
		loc, expr, p.zoned = z, strings.TrimSpace(spec), true
		if expr == "" {
			return p, fmt.Errorf("no expression after %s%s", prefix, zone)
		}
		break
	}
	if loc == nil {
		loc = time.UTC
	}
	if d, ok := strings.CutPrefix(expr, "@every "); ok {
		// robfig rounds a sub-second or fractional interval and accepts a negative
		// one as one second; refuse what it would silently change.
		iv, err := time.ParseDuration(strings.TrimSpace(d))
		switch {
		case err != nil:
			return p, fmt.Errorf("invalid interval in %q: %w", expr, err)
		case iv <= 0:
			return p, fmt.Errorf("interval in %q must be positive", expr)
		case iv%time.Second != 0:
			return p, fmt.Errorf("interval in %q must be whole seconds (use Job.Every for %v)", expr, iv)
		}
	}
	s, err := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
		cron.Month | cron.Dow | cron.Descriptor).Parse(expr)
	if err != nil {
		return p, fmt.Errorf("invalid cron expression %q: %w", expr, err)
	}
	switch s := s.(type) {
	case *cron.SpecSchedule:
		s.Location = loc
		p.sched = cronSchedule{spec: s, loc: loc}
	case cron.ConstantDelaySchedule:
		p.sched, p.interval = every{d: s.Delay, loc: loc}, s.Delay
	default:
		return p, errors.New("unsupported schedule type")
	}
	return p, nil
}
