package cronentry

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/internal/wait"
)

// maxJitter caps the default jitter of a job (Job.JitterFraction of its
// interval), so that a daily job starts within seconds of its time, not hours.
const maxJitter = 10 * time.Second

// jitterGaps is how many of a cron expression's next ticks are looked at for its
// shortest gap, which the default jitter is a fraction of.
const jitterGaps = 64

// defaultMissedAfter is how late the scheduler may reach a tick before the tick counts
// as missed, when Job.MissedAfter is zero. Timers fire within milliseconds of their
// time; a second of lateness means the process did not run (it was frozen, starved or
// the wall clock stepped).
const defaultMissedAfter = time.Second

// Job is one scheduled unit of work. Exactly one of Schedule and Every says when it
// runs; Run is what it does.
type Job struct {
	// Name identifies the job in metrics, logs, errors and the once-per-fleet lock
	// key. It is made of letters, digits and '-', '_', '.', '/', and is unique
	// within a Scheduler.
	Name string

	// Schedule is a cron expression parsed by robfig/cron/v3: five fields (minute
	// hour day-of-month month day-of-week), or six with a leading seconds field;
	// a descriptor (@yearly, @monthly, @weekly, @daily, @hourly, @every 90s); and an
	// optional "CRON_TZ=Europe/Paris " (or "TZ=") prefix naming its time zone.
	// "@every d" takes whole seconds and, like Every, ticks at multiples of d since
	// the Unix epoch.
	Schedule string

	// Every is a fixed interval, used instead of Schedule. Ticks fall on multiples
	// of Every since the Unix epoch (every 10s: at :00, :10, :20 …), not counted
	// from start-up, so that every replica computes the same ticks whenever it
	// started — which OncePerFleet relies on. For "every d after the previous run"
	// use entrypoint.NewLoop.
	Every time.Duration

	// Location is the time zone a Schedule is read in, and the zone of
	// Tick.Scheduled. Nil means UTC, not time.Local: replicas whose hosts are set
	// to different zones still agree on every tick. It must be nil when Schedule
	// has a CRON_TZ= prefix.
	Location *time.Location

	// Jitter delays each tick by a duration drawn uniformly from [0, Jitter), so
	// that many jobs (or replicas) on one schedule do not all start at the same
	// instant. Tick.Scheduled stays the nominal time. It must be below Every (or
	// the @every interval); for a cron expression keep it below the shortest gap
	// between two ticks. Default: JitterFraction of the interval (for a cron
	// expression, of the shortest gap among its next ticks), at most 10s, and for
	// a OncePerFleet job below half its TTL.
	Jitter time.Duration

	// JitterFraction sets Jitter, when Jitter is 0, to this fraction of the
	// interval. It must lie in [0, 1). Default 0.1, as for an entrypoint.Loop: a job
	// every minute starts up to 6s after its tick.
	JitterFraction float64

	// NoJitter turns the jitter off, explicitly: each run starts at its tick. It
	// may not be set with Jitter or JitterFraction.
	NoJitter bool

	// Overlap says what a tick does while the job's previous run still runs on
	// this replica. The default is OverlapSkip.
	Overlap OverlapPolicy

	// SkipMissed says what happens to ticks the scheduler reached more than
	// MissedAfter late (the process was frozen, starved of CPU, or the wall clock
	// stepped forward). By default one run stands in for all the ticks missed
	// together, as soon as the scheduler notices: the run is for the latest of
	// them, with Tick.Missed counting the others, which count as skipped_missed;
	// when an on-time tick is due at the same moment, it is that run. With
	// SkipMissed every missed tick is skipped (skipped_missed) and the job next runs
	// at its next tick that the scheduler reaches in time.
	SkipMissed bool

	// MissedAfter is how late past its time (jitter included) the scheduler may
	// reach a tick before it counts as missed. Default 1s.
	MissedAfter time.Duration

	// MaxRunTime bounds each run: the run's ctx expires after it. Zero means no
	// limit, except for a OncePerFleet job, where it defaults to the lock's TTL
	// and may not exceed it, so that no run outlives its lease.
	MaxRunTime time.Duration

	// OncePerFleet, when set, runs each tick on exactly one replica of the fleet
	// (see FleetLock).
	OncePerFleet *FleetLock

	// Marks declare what the job does to shared state; Scheduler.Marks combines
	// them. A OncePerFleet job counts as mutating shared state and
	// guarded, whatever it declares.
	Marks fleet.Marks

	// Run does the work of one tick. Its ctx is cancelled by Stop (or when the
	// Host gives up on the Scheduler) and expires after MaxRunTime. A returned
	// error and a panic are logged and counted; neither stops the schedule.
	Run func(ctx context.Context, tick Tick) error
}

// Tick is what a run is told about the tick it runs for.
type Tick struct {
	Job string // the job's name
	// Scheduled is the nominal tick time, before jitter, in the job's Location. It
	// is the same on every replica and names the tick in the once-per-fleet lock.
	Scheduled time.Time
	// Fired is when the scheduler started the run: after the jitter and any wait
	// behind a previous run (OverlapQueue).
	Fired time.Time
	// Missed counts earlier ticks that were missed and that this run stands in for
	// (unless Job.SkipMissed); 0 normally.
	Missed int
	// Token is the fencing token of the tick's lease when the job is OncePerFleet,
	// 0 otherwise. Pass it with writes to a store that refuses stale tokens.
	Token uint64
}

// OverlapPolicy says what a tick does while the job's previous run still runs.
type OverlapPolicy int

const (
	// OverlapSkip skips the tick (outcome skipped_overlap). The default.
	OverlapSkip OverlapPolicy = iota
	// OverlapQueue keeps the tick waiting and runs it as soon as the running run
	// ends. At most one tick waits: a newer tick replaces it, and the replaced one
	// counts as skipped_overlap, so the run that follows is for the latest tick.
	OverlapQueue
	// OverlapAllow runs the tick at once, beside the runs still running.
	OverlapAllow
)

func (p OverlapPolicy) String() string {
	switch p {
	case OverlapSkip:
		return "skip"
	case OverlapQueue:
		return "queue"
	case OverlapAllow:
		return "allow"
	}
	return fmt.Sprintf("OverlapPolicy(%d)", int(p))
}

// job is a validated Job with its parsed schedule and its scheduling state.
type job struct {
	Job
	sched       schedule
	loc         *time.Location
	missedAfter time.Duration
	maxRun      time.Duration // 0 = none
	what        string        // names a run in a *fault.PanicError
	stats       *jobStats

	// Owned by the scheduling goroutine.
	next time.Time // the next nominal tick not yet handled; zero when there is none
	fire time.Time // next plus its jitter

	// Guarded by Scheduler.mu.
	running int   // runs started and not yet ended
	queued  *Tick // the tick waiting behind the running run (OverlapQueue)
}

// plan sets the job's next tick to the first one after t.
func (j *job) plan(t time.Time) {
	j.next = j.sched.next(t)
	j.fire = j.next
	if !j.next.IsZero() && j.Jitter > 0 {
		j.fire = j.next.Add(rand.N(j.Jitter))
	}
}

// compile validates every job and returns them parsed, or a *fault.ConfigError listing
// every problem of every job.
func compile(jobs []Job, now time.Time) ([]*job, error) {
	var l fault.Problems
	if len(jobs) == 0 {
		l.Addf("jobs", "must not be empty")
	}
	seen := make(map[string]int, len(jobs))
	out := make([]*job, 0, len(jobs))
	for i, spec := range jobs {
		field := fmt.Sprintf("Jobs[%q]", spec.Name)
		switch prev, dup := seen[spec.Name]; {
		case spec.Name == "":
			field = fmt.Sprintf("Jobs[%d]", i)
			l.Addf(field+".Name", "must not be empty")
		case dup:
			field = fmt.Sprintf("Jobs[%d]", i)
			l.Addf(field+".Name", "duplicates Jobs[%d] (%q)", prev, spec.Name)
		case strings.IndexFunc(spec.Name, badNameRune) >= 0:
			l.Addf(field+".Name", "must be made of letters, digits and '-', '_', '.', '/' only")
		default:
			seen[spec.Name] = i
		}
		if j := compileJob(&l, field, spec, now); j != nil {
			out = append(out, j)
		}
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func badNameRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_./", r)
}

// compileJob checks one job, recording its problems under field, and returns it
// parsed when its schedule could be parsed.
func compileJob(l *fault.Problems, field string, spec Job, now time.Time) *job {
	loc := spec.Location
	if loc == nil {
		loc = time.UTC
	}
	var sched schedule
	interval := spec.Every
	switch {
	case spec.Schedule != "" && spec.Every != 0:
		l.Addf(field, "set Schedule or Every, not both")
	case spec.Schedule == "" && spec.Every == 0:
		l.Addf(field, "set Schedule (a cron expression) or Every (an interval)")
	case spec.Every < 0:
		l.Addf(field+".Every", "must be positive, got %v", spec.Every)
	case spec.Every > 0:
		sched = every{d: spec.Every, loc: loc}
	default:
		ps, err := parseSchedule(spec.Schedule, spec.Location)
		if err != nil {
			l.Addf(field+".Schedule", "%v", err)
			break
		}
		if ps.zoned && spec.Location != nil {
			l.Addf(field+".Location", "must be nil when Schedule names its time zone with a CRON_TZ= or TZ= prefix")
		}
		sched, interval = ps.sched, ps.interval
		if sched.next(now).IsZero() {
			l.Addf(field+".Schedule", "%q never fires", spec.Schedule)
			sched = nil
		}
	}
	if spec.Jitter < 0 {
		l.Addf(field+".Jitter", "must not be negative, got %v", spec.Jitter)
	} else if interval > 0 && spec.Jitter >= interval {
		l.Addf(field+".Jitter", "must be below the interval (%v), got %v", interval, spec.Jitter)
	}
	wait.CheckJitterFraction(l, field+".JitterFraction", spec.JitterFraction)
	if spec.NoJitter && (spec.Jitter != 0 || spec.JitterFraction != 0) {
		l.Addf(field+".NoJitter", "must not be set with Jitter (%v) or JitterFraction (%v)", spec.Jitter, spec.JitterFraction)
	}
	if spec.Overlap < OverlapSkip || spec.Overlap > OverlapAllow {
		l.Addf(field+".Overlap", "unknown policy %v", spec.Overlap)
	}
	if spec.MissedAfter < 0 {
		l.Addf(field+".MissedAfter", "must not be negative, got %v", spec.MissedAfter)
	}
	if spec.MaxRunTime < 0 {
		l.Addf(field+".MaxRunTime", "must not be negative, got %v", spec.MaxRunTime)
	}
	if spec.Run == nil {
		l.Addf(field+".Run", "must not be nil")
	}
	maxRun := spec.MaxRunTime
	if f := spec.OncePerFleet; f != nil {
		f.check(l, field+".OncePerFleet", spec)
		if maxRun == 0 {
			maxRun = f.TTL
		}
	}
	if sched == nil {
		return nil
	}
	if spec.Jitter == 0 && !spec.NoJitter {
		spec.Jitter = defaultJitter(spec, sched, interval, now)
	}
	missedAfter := cmp.Or(spec.MissedAfter, defaultMissedAfter)
	return &job{
		Job:         spec,
		sched:       sched,
		loc:         loc,
		missedAfter: missedAfter,
		maxRun:      maxRun,
		what:        fmt.Sprintf("cron job %q", spec.Name),
	}
}

// defaultJitter is JitterFraction (or wait.JitterFraction) of the
// interval — for a cron expression, of the shortest gap among its next jitterGaps
// ticks — capped at maxJitter and, for a OncePerFleet job, below half its
// TTL, so that the lease outlives the latest start. Invalid figures give 0: their
// problems are reported already.
func defaultJitter(spec Job, sched schedule, interval time.Duration, now time.Time) time.Duration {
	frac := cmp.Or(spec.JitterFraction, wait.JitterFraction)
	if !(frac > 0 && frac < 1) {
		return 0
	}
	if interval <= 0 {
		t := sched.next(now)
		for range jitterGaps {
			n := sched.next(t)
			if n.IsZero() {
				break
			}
			if g := n.Sub(t); interval == 0 || g < interval {
				interval = g
			}
			t = n
		}
	}
	d := min(time.Duration(frac*float64(interval)), maxJitter)
	if f := spec.OncePerFleet; f != nil && f.TTL > 0 {
		d = min(d, f.TTL/2)
	}
	return max(d, 0)
}
