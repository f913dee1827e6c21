package kafkakit

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a write, the outcome label of the producer's counters.
const (
	outcomeOK      = "ok"
	outcomeTimeout = "timeout" // ErrWriteTimeout, or the caller's ctx
	outcomeError   = "error"
)

// producerMetrics are a Producer's collectors. Producers registered with one
// registry share them (each series by topic). A nil *producerMetrics records
// nothing.
type producerMetrics struct {
	writes, messages *prometheus.CounterVec
	duration, batch  *prometheus.HistogramVec
}

// newProducerMetrics registers the collectors with r, or takes those already there
// (another Producer's).
func newProducerMetrics(r prometheus.Registerer) (*producerMetrics, error) {
	if r == nil {
		return nil, nil
	}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "servicewright", Subsystem: "kafka_producer", Name: name, Help: help}
	}
	m := &producerMetrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts(opts("writes_total",
			"WriteMessages calls, by topic and outcome (ok, timeout: not acknowledged within WriteTimeout or the caller's ctx, error).")),
			[]string{"topic", "outcome"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts(opts("messages_total",
			"Messages given to WriteMessages, by topic and the outcome of their call.")), []string{"topic", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "servicewright", Subsystem: "kafka_producer",
			Name: "write_duration_seconds", Help: "Time from a WriteMessages call to the brokers' acknowledgement (or its failure).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}, []string{"topic"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "servicewright", Subsystem: "kafka_producer",
			Name: "batch_messages", Help: "Messages per WriteMessages call.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}}, []string{"topic"}),
	}
	m.writes = register(r, m.writes)
	m.messages = register(r, m.messages)
	m.duration = register(r, m.duration)
	m.batch = register(r, m.batch)
	if m.writes == nil || m.messages == nil || m.duration == nil || m.batch == nil {
		return nil, errors.New("kafkakit: register producer metrics: a collector of another shape holds one of their names")
	}
	return m, nil
}

// register registers c with r and returns it, or the one of the same description
// already registered; nil when r holds a different collector under its name.
func register[C prometheus.Collector](r prometheus.Registerer, c C) C {
	err := r.Register(c)
	if err == nil {
		return c
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	var zero C
	return zero
}

// observe records one WriteMessages call.
func (m *producerMetrics) observe(topic string, n int, took time.Duration, err error) {
	if m == nil {
		return
	}
	outcome := outcomeOK
	switch {
	case errors.Is(err, ErrWriteTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		outcome = outcomeTimeout
	case err != nil:
		outcome = outcomeError
	}
	m.writes.WithLabelValues(topic, outcome).Inc()
	m.messages.WithLabelValues(topic, outcome).Add(float64(n))
	m.duration.WithLabelValues(topic).Observe(took.Seconds())
	m.batch.WithLabelValues(topic).Observe(float64(n))
}
