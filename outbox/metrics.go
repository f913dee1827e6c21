package outbox

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Relay's collectors. A nil *metrics (no registerer) records
// nothing.
type metrics struct {
	pending, oldest   prometheus.Gauge
	published, failed prometheus.Counter
}

func newMetrics(r prometheus.Registerer, entrypoint, table string) (*metrics, error) {
	if r == nil {
		return nil, nil
	}
	labels := prometheus.Labels{"entrypoint": entrypoint, "table": table}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "servicewright", Subsystem: "outbox", Name: name, Help: help, ConstLabels: labels}
	}
	m := &metrics{
		pending: prometheus.NewGauge(prometheus.GaugeOpts(opts("pending",
			"Events in the outbox table not yet published, counted up to 100000; read by each relay once per tick."))),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts(opts("oldest_age_seconds",
			"Age of the oldest event not yet published, by the database's clock; 0 when none is."))),
		published: prometheus.NewCounter(prometheus.CounterOpts(opts("published_total",
			"Events this relay published and deleted."))),
		failed: prometheus.NewCounter(prometheus.CounterOpts(opts("failed_total",
			"Events of passes that failed after their claim (publish, delete or commit); they stay pending and are retried."))),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.pending, m.oldest, m.published, m.failed} {
		if err := r.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) publish(n int) {
	if m != nil {
		m.published.Add(float64(n))
	}
}

func (m *metrics) fail(n int) {
	if m != nil {
		m.failed.Add(float64(n))
	}
}
