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
}

type topicMetrics struct {
	consumed, handled, failed, deadLettered prometheus.Counter
	paused                                  map[string]prometheus.Gauge // by cause; read-only after New
}

// causes are the values of the paused gauge's cause label, each present from the
// start.
var causes = [...]string{causeTransient, causeDependencyCheck, causeDistinctFailures}

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
		Help: "Partitions of the topic paused on a message by a dependency outage, by the rule that saw it (cause); 0 when none is.",
	}, []string{"topic", "cause"})
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
	m := &metrics{byTopic: make(map[string]*topicMetrics, len(topics)), committed: committed}
	for _, t := range topics {
		tm := &topicMetrics{
			consumed:     consumed.WithLabelValues(t),
			handled:      handled.WithLabelValues(t),
			failed:       failed.WithLabelValues(t),
			deadLettered: deadLettered.WithLabelValues(t),
			paused:       make(map[string]prometheus.Gauge, len(causes)),
		}
		for _, cause := range causes {
			tm.paused[cause] = paused.WithLabelValues(t, cause) // at 0 until a pause
		}
		m.byTopic[t] = tm
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

// setPaused moves one of topic's partitions from the paused count of the cause was
// ("": none) to that of now ("": not paused).
func (m *metrics) setPaused(topic string, was, now string) {
	tm := m.topic(topic)
	if tm == nil {
		return
	}
	if g := tm.paused[was]; g != nil {
		g.Dec()
	}
	if g := tm.paused[now]; g != nil {
		g.Inc()
	}
}
