package sentrykit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime/debug"

	"github.com/getsentry/sentry-go"

	"github.com/servicewright/servicewright/fault"
)

// Config says where events go and how they are labelled. Each empty field takes the
// standard Sentry variable named beside it.
type Config struct {
	// DSN is the project's Data Source Name. Required. SENTRY_DSN.
	DSN string
	// Environment labels the events, e.g. "production". SENTRY_ENVIRONMENT.
	Environment string
	// Release labels the events with the version of the code. SENTRY_RELEASE, then
	// the main module's version from the build information when it is known.
	Release string
	// ServerName labels the events with the machine. By default, each event's
	// "instance" tag (the Host's service.instance.id: INSTANCE_ID, or the host name
	// and pid), or the host name.
	ServerName string
}

// Option changes how a Reporter is built.
type Option func(*options)

type options struct {
	lookup func(string) (string, bool)
}

// WithEnv replaces os.LookupEnv as the source of the SENTRY_* variables. Tests use it.
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.lookup = lookup }
}

// Reporter sends errors to Sentry. It implements fault.Reporter; it is safe for
// concurrent use.
type Reporter struct {
	client     *sentry.Client
	serverName bool // Config.ServerName was given
	delivery   *delivery
}

var _ fault.Reporter = (*Reporter)(nil)

// New validates cfg, filling its empty fields from the environment, and builds a
// Reporter. A missing or malformed DSN is a *fault.ConfigError that names the field
// or variable but never repeats the DSN. New opens no connection.
func New(cfg Config, opts ...Option) (*Reporter, error) {
	o := options{lookup: os.LookupEnv}
	for _, opt := range opts {
		opt(&o)
	}
	env := func(v *string, name string) {
		if *v == "" {
			*v, _ = o.lookup(name)
		}
	}
	dsnField := "DSN"
	if cfg.DSN == "" {
		dsnField = "SENTRY_DSN"
	}
	env(&cfg.DSN, "SENTRY_DSN")
	env(&cfg.Environment, "SENTRY_ENVIRONMENT")
	env(&cfg.Release, "SENTRY_RELEASE")
	if cfg.Release == "" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			cfg.Release = bi.Main.Version
		}
	}
	if cfg.DSN == "" {
		return nil, fault.Invalid("DSN", "required: set Config.DSN or SENTRY_DSN")
	}
	if _, err := sentry.NewDsn(cfg.DSN); err != nil {
		return nil, fault.Invalid(dsnField, "not a valid Sentry DSN (want scheme://key@host/project)")
	}
	d := newDelivery()
	client, err := sentry.NewClient(sentry.ClientOptions{
		HTTPTransport: d,
		Dsn:           cfg.DSN,
		Environment:   cfg.Environment,
		Release:       cfg.Release,
		ServerName:    cfg.ServerName,
		// The SDK's telemetry buffer hands events to its transport from a goroutine
		// of its own, so a Flush can find both empty while an event is between them
		// and report success with the event unsent. The classic transport queues an
		// event inside CaptureEvent, so Flush, at exit, waits for every one.
		DisableTelemetryBuffer: true,
	})
	if err != nil {
		return nil, fault.Invalid(dsnField, "rejected by the Sentry SDK: %s", redact(err, cfg.DSN))
	}
	return &Reporter{client: client, serverName: cfg.ServerName != "", delivery: d}, nil
}

// Report queues an event for err and returns without waiting for the network. The
// event carries tags as Sentry tags and, when tags hold a trace id, a trace context.
// A *fault.PanicError anywhere in err's chain gives the event its stack, the
// panicking goroutine's, from the panic down; other errors have none (the stack of
// the caller of Report would only mislead).
func (r *Reporter) Report(_ context.Context, err error, tags map[string]string) {
	if err == nil {
		return
	}
	exc := sentry.Exception{Type: fmt.Sprintf("%T", err), Value: err.Error()}
	if pe, ok := errors.AsType[*fault.PanicError](err); ok {
		exc.Type = "panic"
		exc.Stacktrace = stacktrace(pe.Stack)
		handled := true // the Host recovered it
		exc.Mechanism = &sentry.Mechanism{Type: "panic", Handled: &handled}
	}
	ev := sentry.NewEvent()
	ev.Level = sentry.LevelError
	ev.Message = err.Error()
	ev.Exception = []sentry.Exception{exc}
	ev.Tags = maps.Clone(tags)
	if !r.serverName {
		ev.ServerName = tags[fault.TagInstance]
	}
	if id := tags[fault.TagTraceID]; id != "" {
		ev.Contexts["trace"] = sentry.Context{"trace_id": id, "span_id": tags[fault.TagSpanID]}
	}
	r.client.CaptureEvent(ev, nil, nil)
}

// Flush sends the queued events and returns nil when every event sent since the
// last Flush was delivered. It returns ctx's error when ctx is done first (the
// backend hangs), and an error counting the undelivered requests when the backend
// refused the connection or answered other than 2xx: a Flush against a backend that
// refuses fails as one that hangs does. Neither error repeats the DSN.
func (r *Reporter) Flush(ctx context.Context) error {
	if !r.client.FlushWithContext(ctx) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sentry: events not sent: %w", err)
		}
		return errors.New("sentry: events not sent")
	}
	if n, why := r.delivery.take(); n > 0 {
		return fmt.Errorf("sentry: %d requests not delivered, the last: %s", n, why)
	}
	return nil
}

// Close flushes nothing and stops the SDK's transport. A Reporter is not used after.
func (r *Reporter) Close() { r.client.Close() }
