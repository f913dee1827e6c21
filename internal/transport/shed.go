package transport

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servicewright/servicewright/entrypoint"
)

// Shed are a server entrypoint's admission metrics, named servicewright_<protocol>_…:
// shed_total{reason}, the requests refused by the Gate, reason "draining" (the
// Gate was closed), "overload" (the adaptive concurrency limit was reached) or
// "saturated" (the process's CPUs were saturated and the scheduler's run queue
// long); the admission_limit gauge, the current limit, and the admission_share
// gauge, the share of ordinary requests under it admitted in the limiter's last
// window (both 0 when admission is off). The entrypoint counts the draining refusals; the others
// are read from the Limiter.
type Shed struct {
	Draining   *Counter
	collectors []prometheus.Collector
	reg        prometheus.Registerer
}

// A Counter is a count kept outside any registry and collected by its owner.
type Counter struct{ n atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// NewShed registers the admission metrics of protocol with reg, all or none, under
// the constant label entrypoint=name; the overload counts and the gauges read the
// Limiter lim returns (nil when admission is off).
func NewShed(reg prometheus.Registerer, name, protocol string, lim func() entrypoint.Limiter) (Shed, error) {
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"entrypoint": name}, reg)
	prefix := "servicewright_" + protocol + "_"
	draining := &Counter{}
	shed := &shedCollector{draining: draining, lim: lim, desc: prometheus.NewDesc(prefix+"shed_total",
		"Requests refused by the admission gate, by reason: draining, overload (the concurrency limit) or saturated (the CPUs).",
		[]string{"reason"}, nil)}
	limit := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: prefix + "admission_limit",
		Help: "The adaptive concurrency limit of ordinary requests; 0 when admission is off.",
	}, func() float64 {
		if l := lim(); l != nil {
			return float64(l.Limit())
		}
		return 0
	})
	share := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: prefix + "admission_share",
		Help: "The share of ordinary requests under the limit admitted in the limiter's last window: 1 unless the process is saturated; 0 when admission is off.",
	}, func() float64 {
		if l := lim(); l != nil {
			return l.Share()
		}
		return 0
	})
	cs := []prometheus.Collector{shed, limit, share}
	if err := Register(reg, cs...); err != nil {
		return Shed{}, err
	}
	return Shed{Draining: draining, collectors: cs, reg: reg}, nil
}

// Unregister takes the metrics off the registry NewShed registered them with.
func (s Shed) Unregister() {
	for _, c := range s.collectors {
		s.reg.Unregister(c)
	}
}

// shedCollector collects shed_total: its draining count, and the Limiter's two.
type shedCollector struct {
	desc     *prometheus.Desc
	draining *Counter
	lim      func() entrypoint.Limiter
}

func (c *shedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *shedCollector) Collect(ch chan<- prometheus.Metric) {
	var overload, saturated uint64
	if l := c.lim(); l != nil {
		overload, saturated = l.ShedCount(), l.SaturatedCount()
	}
	for _, v := range []struct {
		reason string
		n      uint64
	}{{"draining", c.draining.n.Load()}, {"overload", overload}, {"saturated", saturated}} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(v.n), v.reason)
	}
}
