package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/telemetry"
)

// TelemetryConfig sets up what the Host builds before anything else, so that every
// later failure is visible: the logger, the error reporter, the tracer and meter
// providers and the Prometheus registry.
//
// With the option otlp.FromEnv (package host/otlp), spans are exported over OTLP when
// the standard OpenTelemetry variables ask for it: OTEL_TRACES_EXPORTER, or an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). The
// exporter, its protocol, headers and timeout, the sampler (OTEL_TRACES_SAMPLER), the propagators (OTEL_PROPAGATORS,
// default W3C tracecontext and baggage) and the resource (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES) follow the OpenTelemetry specification, read from the
// process environment by the OpenTelemetry packages themselves. With none of them
// set, nothing is exported, and no span is recorded but those an upstream service
// sampled (so that its decision travels on); a span still carries a trace id, for the
// logs. OTEL_SDK_DISABLED=true turns export off.
// OTEL_METRICS_EXPORTER, when set, adds a reader of the OpenTelemetry instruments
// beside the Prometheus registry. OpenTelemetry's own messages (a malformed variable,
// a failed export) go to the Host's logger.
type TelemetryConfig struct {
	// Logger receives every log line of the Host and its entrypoints. When nil, the
	// Host logs to stderr at the level in SW_LOG_LEVEL (default "info"), in the
	// encoding in SW_LOG_FORMAT: "json", or "console" for a person to read. By
	// default it is console when stderr is a terminal, JSON otherwise.
	Logger *zap.Logger
	// Registry receives the Host's metrics and the OpenTelemetry meter provider's,
	// and is served at /metrics on the probe listener. When nil, a fresh registry
	// with the Go and process collectors is used.
	Registry *prometheus.Registry
	// SpanProcessors receive the spans of the lifecycle and of the application,
	// before the OTLP exporter configured from the environment, if any.
	SpanProcessors []sdktrace.SpanProcessor
	// Reporter receives the failures the Host sees — a startup failure, an
	// essential entrypoint's failure, a recovered panic — tagged with the service,
	// the instance, the entrypoint, the stage and the trace id. It is flushed in the
	// flush stage, together with the spans and the metrics; when something is
	// reported after that (a panic in a post_shutdown hook or in closing the probe
	// listener), it is flushed once more before the report. When nil, failures are
	// only logged.
	Reporter fault.Reporter
}

// outputs is what the Host built from a TelemetryConfig.
type outputs struct {
	log      *zap.Logger
	reg      *prometheus.Registry
	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	prop     propagation.TextMapPropagator
	tracer   trace.Tracer
	metrics  *lifecycleMetrics
	reporter fault.Reporter // nil: none
	tags     map[string]string
	// receiving is whether anything receives spans (an exporter from OTEL_*, or
	// TelemetryConfig.SpanProcessors). When nothing does, the Host hands its
	// entrypoints no tracer provider, so a request pays nothing for spans that no
	// one would see (otelhttp alone costs about a third of httpentry's throughput).
	receiving bool
	ownedLog  bool
	// sink is the output of the logger the Host built (nil for TelemetryConfig.Logger):
	// it never blocks, and counts what it could not write.
	sink *telemetry.Sink
	// spans counts the exporter's failures, so that a collector that refuses is
	// seen as well as one that hangs; nil when nothing is exported.
	spans *countedSpans
	// reports counts what was sent to the reporter, so the Host knows whether a
	// second flush is needed.
	reports atomic.Uint64
}

// builtLog is what the Host's own logger is built with, when TelemetryConfig has none.
type builtLog struct {
	console bool            // the console encoding, for a person
	sink    *telemetry.Sink // the logger's output: it never blocks, and counts its losses
}

// withEnv builds the Host's own logger when c has none: to stderr, at the level in
// SW_LOG_LEVEL and in the encoding in SW_LOG_FORMAT, both read through lookup. A bad
// value is recorded in l under Telemetry.Logger and its variable, and the default
// (info; JSON, or console on a terminal) used in its place, so that the problem can
// be logged.
func (c TelemetryConfig) withEnv(lookup func(string) (string, bool), l *fault.Problems) (TelemetryConfig, builtLog) {
	if c.Logger != nil {
		return c, builtLog{}
	}
	level, _ := lookup("SW_LOG_LEVEL")
	format, _ := lookup("SW_LOG_FORMAT")
	var b builtLog
	c.Logger, b.console, b.sink = telemetry.NewLogger("Telemetry.Logger", level, format, l)
	return c, b
}

// resolve fills the defaults that need no environment: a nil Registry is a fresh one
// with the Go and process collectors. No field of a TelemetryConfig can be wrong
// (a nil Reporter is none, no SpanProcessors is none), so l records nothing.
func (c TelemetryConfig) resolve(*fault.Problems) TelemetryConfig {
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
		c.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return c
}

// newTelemetry builds the logger first (withEnv), then the rest. A problem with the
// environment is a *fault.ConfigError, logged before it is returned.
func newTelemetry(cfg TelemetryConfig, service, instance string, lookup func(string) (string, bool), exporter exportFunc) (*outputs, error) {
	var problems fault.Problems
	owned := cfg.Logger == nil
	cfg, built := cfg.withEnv(lookup, &problems)
	cfg = cfg.resolve(&problems)
	t := &outputs{log: cfg.Logger, reg: cfg.Registry, reporter: cfg.Reporter, ownedLog: owned, sink: built.sink,
		tags: map[string]string{fault.TagService: service, fault.TagInstance: instance}}
	if built.console { // the console encoding drops them from every later line: say them once
		t.log.Info("starting", zap.String("service", service), zap.String("instance", instance))
	}
	t.log = t.log.With(zap.String("service", service))
	if t.sink != nil {
		t.sink.SetReporter(t.log)
	}
	otelDiagnostics(t.log)
	vars := telemetry.Vars{Propagators: os.Getenv("OTEL_PROPAGATORS"), SDKDisabled: os.Getenv("OTEL_SDK_DISABLED")}
	env := telemetry.FromEnv(service, instance, vars, exporter, &problems)
	if err := problems.Err(); err != nil {
		t.log.Error("invalid configuration; nothing was started", zap.Error(err))
		_ = t.sync()
		return nil, err
	}
	t.prop = env.Propagator
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(env.Resource)}
	for _, p := range cfg.SpanProcessors {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	if env.Spans != nil {
		t.spans = &countedSpans{SpanExporter: env.Spans}
		opts = append(opts, sdktrace.WithBatcher(t.spans))
	}
	t.receiving = env.Spans != nil || len(cfg.SpanProcessors) > 0
	if !t.receiving && os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		// Nothing receives spans: record none but those an upstream service sampled, so
		// its decision travels on. A root span still gets a trace id, for the logs.
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	}
	t.tp = sdktrace.NewTracerProvider(opts...)
	t.tracer = t.tp.Tracer("github.com/servicewright/servicewright/host")
	exp, err := otelprom.New(otelprom.WithRegisterer(t.reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	mopts := []sdkmetric.Option{sdkmetric.WithReader(exp), sdkmetric.WithResource(env.Resource)}
	if env.Metrics != nil {
		mopts = append(mopts, sdkmetric.WithReader(env.Metrics))
	}
	t.mp = sdkmetric.NewMeterProvider(mopts...)
	t.metrics, err = newLifecycleMetrics(t.reg)
	if err != nil {
		return nil, err
	}
	if t.sink != nil {
		for _, c := range t.sink.Collectors() {
			if err := t.reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	if env.Spans != nil {
		t.log.Info("exporting spans", zap.String("exporter", fmt.Sprintf("%T", env.Spans)))
	}
	return t, nil
}

// Propagator returns the propagator that carries trace context across processes:
// OTEL_PROPAGATORS, or W3C tracecontext and baggage by default.
func (h *Host) Propagator() propagation.TextMapPropagator { return h.tel.prop }

// Reporter returns the error reporter of TelemetryConfig, or nil when there is none.
func (h *Host) Reporter() fault.Reporter { return h.tel.reporter }

// loss is one signal the flush could not deliver, and why.
type loss struct {
	signal string // "spans", "metrics", "errors" or "logs"
	err    error
}

// flush exports what is buffered and shuts the providers down, flushes the error
// reporter and syncs the logger, all at once and within ctx; without a deadline in
// ctx, within defaultStepTimeout. It returns what could not be delivered: a provider
// or reporter that did not finish in time, an export the collector refused or failed
// (counted by the exporter since the start), a logger that could not sync. The logger
// stays usable, for the shutdown report.
func (t *outputs) flush(ctx context.Context) []loss {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStepTimeout)
		defer cancel()
	}
	var (
		wg   sync.WaitGroup
		errs [3]error
	)
	wg.Go(func() { errs[0] = t.tp.Shutdown(ctx) })
	wg.Go(func() { errs[1] = t.mp.Shutdown(ctx) })
	if t.reporter != nil {
		wg.Go(func() { errs[2] = t.reporter.Flush(ctx) })
	}
	wg.Wait()
	if t.spans != nil && errs[0] == nil {
		errs[0] = t.spans.failed()
	}
	var lost []loss
	for i, signal := range []string{"spans", "metrics", "errors"} {
		if errs[i] != nil {
			lost = append(lost, loss{signal, errs[i]})
		}
	}
	if err := t.sync(); err != nil {
		lost = append(lost, loss{"logs", err})
	}
	return lost
}

// flushReporter flushes the error reporter alone, within ctx, for what was reported
// after flush.
func (t *outputs) flushReporter(ctx context.Context) []loss {
	if t.reporter == nil {
		return nil
	}
	if err := t.reporter.Flush(ctx); err != nil {
		return []loss{{"errors", err}}
	}
	return nil
}

// lostAll is what a flush abandoned past its timeout (err) lost: everything it was
// sending.
func (t *outputs) lostAll(err error) []loss {
	lost := []loss{{"metrics", err}}
	if t.spans != nil {
		lost = append(lost, loss{"spans", err})
	}
	if t.reporter != nil {
		lost = append(lost, loss{"errors", err})
	}
	return lost
}

// reported is how many failures were sent to the reporter so far.
func (t *outputs) reported() uint64 { return t.reports.Load() }

// countedSpans is the span exporter, counting the exports that failed: a collector
// that refuses the connection fails each export at once, which the batch processor
// only hands to OpenTelemetry's error handler.
type countedSpans struct {
	sdktrace.SpanExporter
	failures atomic.Int64
	last     atomic.Pointer[error]
}

func (c *countedSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		c.failures.Add(1)
		c.last.Store(&err)
	}
	return err
}

// failed is an error naming how many exports failed and the last failure, or nil.
func (c *countedSpans) failed() error {
	n := c.failures.Load()
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d exports failed, the last: %w", n, *c.last.Load())
}

// sync flushes the logger; stderr and stdout refuse fsync on some systems, which is not
// a failure.
func (t *outputs) sync() error {
	err := t.log.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTTY) || errors.Is(err, syscall.EBADF) {
		return nil
	}
	return err
}

// LoggerFor returns log with the trace_id and span_id of the span in ctx, so every
// line written inside a traced operation can be found from its trace. Without a
// valid span in ctx it returns log unchanged.
func LoggerFor(ctx context.Context, log *zap.Logger) *zap.Logger {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return log
	}
	return log.With(zap.String("trace_id", sc.TraceID().String()), zap.String("span_id", sc.SpanID().String()))
}
