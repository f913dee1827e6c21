package kafkaentry

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the consumer's Prometheus collectors. A nil *metrics (no registerer)
// records nothing.
type metrics struct {
	byTopic   map[string]*topicMetrics // made at New for every consumed topic; read-only after
	committed *prometheus.GaugeVec
	paused    *prometheus.GaugeVec
}

type topicMetrics struct {
	consumed, handled, failed, deadLettered prometheus.Counter
}

// newMetrics makes the collectors and registers them with r. inFlight is read at
// every scrape.
func newMetrics(r prometheus.Registerer, entrypoint string, topics []string, inFlight func() float64) (*metrics, error) {
	if r == nil {
		return nil, nil
	}
	labels := prometheus.Labels{"entrypoint": entrypoint}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "servicewright", Subsystem: "kafka", Name: name, Help: help, ConstLabels: labels,
		}, []string{"topic"})
	}
	consumed := counter("messages_consumed_total", "Messages fetched from Kafka.")
	handled := counter("messages_handled_total", "Messages whose handler succeeded.")
	failed := counter("messages_failed_total", "Handler calls that returned an error or panicked, retries included.")
	deadLettered := counter("messages_dead_lettered_total", "Messages written to the dead-letter topic.")
	committed := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "servicewright", Subsystem: "kafka", Name: "committed_offset", ConstLabels: labels,
		Help: "The last offset committed for the group, per partition (the next message to consume).",
	}, []string{"topic", "partition"})
	paused := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "servicewright", Subsystem: "kafka", Name: "paused", ConstLabels: labels,
		Help: "1 while a partition is paused on a message by a dependency outage, with the rule that saw it (cause).",
	}, []string{"topic", "partition", "cause"})
	inFlightGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "servicewright", Subsystem: "kafka", Name: "in_flight", ConstLabels: labels,
		Help: "Messages being handled, retries and dead-lettering included.",
	}, inFlight)

	var errs []error
	for _, c := range []prometheus.Collector{consumed, handled, failed, deadLettered, committed, paused, inFlightGauge} {
		if err := r.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	m := &metrics{byTopic: make(map[string]*topicMetrics, len(topics)), committed: committed, paused: paused}
	for _, t := range topics {
		m.byTopic[t] = &topicMetrics{
			consumed:     consumed.WithLabelValues(t),
			handled:      handled.WithLabelValues(t),
			failed:       failed.WithLabelValues(t),
			deadLettered: deadLettered.WithLabelValues(t),
		}
	}
	return m, nil
}

// topic returns the counters of topic, or nil when there are none.
func (m *metrics) topic(t string) *topicMetrics {
	if m == nil {
		return nil
	}
	return m.byTopic[t]
}

func (m *metrics) setCommitted(topic string, partition int, next int64) {
	if m != nil {
		m.committed.WithLabelValues(topic, strconv.Itoa(partition)).Set(float64(next))
	}
}

// setPaused moves a partition's paused series from the cause was ("": none) to now
// ("": not paused).
func (m *metrics) setPaused(topic string, partition int, was, now string) {
	if m == nil {
		return
	}
	p := strconv.Itoa(partition)
	if was != "" {
		m.paused.DeleteLabelValues(topic, p, was)
	}
	if now != "" {
		m.paused.WithLabelValues(topic, p, now).Set(1)
	}
}
