package host

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/fault"
)

// TelemetryConfig sets up what the Host builds before anything else, so that every
// later failure is visible.
type TelemetryConfig struct {
	// Logger receives every log line of the Host and its entrypoints. When nil, the
	// Host logs JSON to stderr at the level in SW_LOG_LEVEL (default "info").
	Logger *zap.Logger
	// Registry receives the Host's metrics and the OpenTelemetry meter provider's,
	// and is served at /metrics on the probe listener. When nil, a fresh registry
	// with the Go and process collectors is used.
	Registry *prometheus.Registry
	// SpanProcessors receive the spans of the lifecycle and of the application
	// (e.g. a batch processor around an OTLP exporter). None by default: spans are
	// created and dropped.
	SpanProcessors []sdktrace.SpanProcessor
}

// telemetry is what the Host built from a TelemetryConfig.
type telemetry struct {
	log      *zap.Logger
	reg      *prometheus.Registry
	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	tracer   trace.Tracer
	metrics  *lifecycleMetrics
	ownedLog bool
}

func newTelemetry(cfg TelemetryConfig, service string, lookup func(string) (string, bool)) (*telemetry, error) {
	t := &telemetry{log: cfg.Logger, reg: cfg.Registry}
	if t.log == nil {
		level := zapcore.InfoLevel
		if v, ok := lookup("SW_LOG_LEVEL"); ok && v != "" {
			if err := level.Set(strings.ToLower(v)); err != nil {
				return nil, fault.Invalid("SW_LOG_LEVEL", "unknown level %q (want debug, info, warn or error)", v)
			}
		}
		enc := zap.NewProductionEncoderConfig()
		enc.TimeKey = "ts"
		enc.EncodeTime = zapcore.ISO8601TimeEncoder
		enc.EncodeDuration = zapcore.StringDurationEncoder
		core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(os.Stderr), level)
		t.log = zap.New(core)
		t.ownedLog = true
	}
	t.log = t.log.With(zap.String("service", service))
	if t.reg == nil {
		t.reg = prometheus.NewRegistry()
		t.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	res := resource.NewSchemaless(attribute.String("service.name", service))
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, p := range cfg.SpanProcessors {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	t.tp = sdktrace.NewTracerProvider(opts...)
	t.tracer = t.tp.Tracer("github.com/servicewright/servicewright/host")
	exp, err := otelprom.New(otelprom.WithRegisterer(t.reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
	t.metrics, err = newLifecycleMetrics(t.reg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// flush exports what is buffered and shuts the providers down. The logger is synced
// but stays usable, for the shutdown report.
func (t *telemetry) flush(ctx context.Context) error {
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx), t.sync())
}

// sync flushes the logger; stderr and stdout refuse fsync on some systems, which is not
// a failure.
func (t *telemetry) sync() error {
	err := t.log.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTTY) || errors.Is(err, syscall.EBADF) {
		return nil
	}
	return err
}

// lifecycleMetrics are the Host's own Prometheus metrics.
type lifecycleMetrics struct {
	stage         *prometheus.GaugeVec
	stageDuration *prometheus.GaugeVec
	failures      *prometheus.CounterVec
	shutdowns     *prometheus.CounterVec
	ready         prometheus.Gauge
}

func newLifecycleMetrics(reg prometheus.Registerer) (*lifecycleMetrics, error) {
	m := &lifecycleMetrics{
		stage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "servicewright_lifecycle_stage",
			Help: "1 for the lifecycle stage the service is in, 0 for the others.",
		}, []string{"stage"}),
		stageDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "servicewright_lifecycle_stage_duration_seconds",
			Help: "How long each lifecycle stage took, the last time it ran.",
		}, []string{"stage"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "servicewright_entrypoint_failures_total",
			Help: "Entrypoints whose Serve failed before stop, by name.",
		}, []string{"entrypoint"}),
		shutdowns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "servicewright_shutdowns_total",
			Help: "Completed shutdowns by result (success, timeout, failure).",
		}, []string{"result"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "servicewright_ready",
			Help: "1 while the service reports ready.",
		}),
	}
	for _, c := range []prometheus.Collector{m.stage, m.stageDuration, m.failures, m.shutdowns, m.ready} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
