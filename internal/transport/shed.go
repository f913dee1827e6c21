package transport

import "github.com/prometheus/client_golang/prometheus"

// Shed are a server entrypoint's admission metrics, named servicewright_<protocol>_…:
// shed_total{reason}, the requests refused by the Gate, reason "draining" (the
// Gate was closed) or "overload" (the adaptive limit was reached); and the
// admission_limit gauge, the current limit (0 when admission is off).
type Shed struct {
	Draining, Overload prometheus.Counter
	collectors         []prometheus.Collector
	reg                prometheus.Registerer
}

// NewShed registers the admission metrics of protocol with reg, all or none, under
// the constant label entrypoint=name; the gauge reads limit.
func NewShed(reg prometheus.Registerer, name, protocol string, limit func() int) (Shed, error) {
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"entrypoint": name}, reg)
	prefix := "servicewright_" + protocol + "_"
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: prefix + "shed_total",
		Help: "Requests refused by the admission gate, by reason: draining or overload.",
	}, []string{"reason"})
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: prefix + "admission_limit",
		Help: "The adaptive concurrency limit of ordinary requests; 0 when admission is off.",
	}, func() float64 { return float64(limit()) })
	cs := []prometheus.Collector{vec, gauge}
	if err := Register(reg, cs...); err != nil {
		return Shed{}, err
	}
	return Shed{Draining: vec.WithLabelValues("draining"), Overload: vec.WithLabelValues("overload"), collectors: cs, reg: reg}, nil
}

// Unregister takes the metrics off the registry NewShed registered them with.
func (s Shed) Unregister() {
	for _, c := range s.collectors {
		s.reg.Unregister(c)
	}
}
