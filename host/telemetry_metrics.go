package host

import "github.com/prometheus/client_golang/prometheus"

// lifecycleMetrics are the Host's own Prometheus metrics.
type lifecycleMetrics struct {
	stage         *prometheus.GaugeVec
	stageDuration *prometheus.GaugeVec
	failures      *prometheus.CounterVec
	shutdowns     *prometheus.CounterVec
	ready         prometheus.Gauge
	undelivered   *prometheus.CounterVec
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
			Help: "Completed shutdowns by result (success, timeout, failure, interrupted).",
		}, []string{"result"}),
		undelivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "servicewright_telemetry_undelivered_total",
			Help: "Telemetry flushes at exit that could not deliver a signal (spans, metrics, errors, logs): the backend hung, refused or failed.",
		}, []string{"signal"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "servicewright_ready",
			Help: "1 while the service reports ready.",
		}),
	}
	for _, c := range []prometheus.Collector{m.stage, m.stageDuration, m.failures, m.shutdowns, m.ready, m.undelivered, newBuildInfo()} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range []Result{ResultSuccess, ResultTimeout, ResultFailure, ResultInterrupted} {
		m.shutdowns.WithLabelValues(r.String()) // exported at 0 from the start, so rate() and alerts see it
	}
	return m, nil
}
