package host

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
)

// Plain wiring: what the Host builds first is reachable from the *Host that New
// returns, before any entrypoint exists, so code outside an fx container builds its
// entrypoints with the Host's logger, metrics and tracing, then registers them:
//
//	h, err := host.New(spec) // spec without Entrypoints
//	api := newAPI(h.Logger(), h.Registerer())
//	err = h.Register(host.Registration{Entrypoint: api})
//	err = h.Run(ctx)

// ErrRegisterAfterRun is returned by Register, and wrapped by AddCheck and OnClose,
// once Run has been called: what the service runs is fixed when it starts.
var ErrRegisterAfterRun = errors.New("host: registered after Run: add every entrypoint, check and close step before Run")

// Registerer is the Prometheus registerer of the Host's metrics, served at /metrics
// on the probe listener (TelemetryConfig.Registry, or the Host's own registry with
// the Go and process collectors).
func (h *Host) Registerer() prometheus.Registerer { return h.tel.reg }

// Gatherer is what /metrics serves: the same registry as Registerer.
func (h *Host) Gatherer() prometheus.Gatherer { return h.tel.reg }

// TracerProvider is the provider of the Host's lifecycle spans; spans go to
// TelemetryConfig.SpanProcessors.
func (h *Host) TracerProvider() trace.TracerProvider { return h.tel.tp }

// MeterProvider is the OpenTelemetry meter provider whose instruments the Host
// exports on its Prometheus registry.
func (h *Host) MeterProvider() metric.MeterProvider { return h.tel.mp }

// Register adds entrypoints to the service after New, validated exactly as New
// validates AppSpec.Entrypoints: every problem of the whole set — a nil entrypoint,
// an empty or duplicate name, the fleet profile, a stop time beyond DrainGrace — is
// returned at once in a *fault.ConfigError, and then none of regs is added. Each
// added entrypoint that implements entrypoint.DefaultsUser is given the Host's
// logger, registerer, tracer provider, propagator and error reporter, used where it
// was given none of its own, and what it cannot take (a metrics registration that
// clashes with one in the Host's registry) is a problem of that entrypoint in the
// same *fault.ConfigError, "Entrypoints[\"api\"]: …"; each that implements
// health.MonitorUser is given the Host's Monitor.
// Register must be called before Run; afterwards it returns ErrRegisterAfterRun.
func (h *Host) Register(regs ...Registration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ran.Load() {
		return ErrRegisterAfterRun
	}
	all := append(slices.Clone(h.regs), regs...)
	var problems fault.Problems
	validateEntrypoints(&h.spec, all, &problems)
	checkDrainTimes(all, h.budgets.DrainGrace, h.budgetVars, &problems)
	if err := problems.Err(); err != nil {
		return err
	}
	return h.adopt(all)
}

// adopt makes regs the Host's entrypoints, in bind order, handing the Host's telemetry
// (entrypoint.Telemetry) and its Monitor to each new one that takes them. When a new
// one cannot take the telemetry (SetDefaults returns an error), adopt returns a
// *fault.ConfigError listing each such entrypoint and the Host's entrypoints stay as
// they were. The caller holds h.mu or owns h alone.
func (h *Host) adopt(regs []Registration) error {
	slices.SortStableFunc(regs, func(a, b Registration) int { return cmp.Compare(a.Order, b.Order) })
	old := map[string]*entry{}
	for _, e := range h.entries {
		old[e.name] = e
	}
	var problems fault.Problems
	found := make([]caps, len(regs))
	for i, r := range regs {
		name := r.Entrypoint.Name()
		if old[name] != nil {
			continue
		}
		found[i] = probe(r.Entrypoint)
		if du := found[i].Defaults; du != nil {
			if err := du.SetDefaults(h.defaults()); err != nil {
				problems.Addf(fmt.Sprintf("Entrypoints[%q]", name), "cannot take the Host's telemetry: %v", err)
			}
		}
	}
	if err := problems.Err(); err != nil {
		return err
	}
	h.regs = regs
	h.entries = h.entries[:0:0]
	for i, r := range regs {
		name := r.Entrypoint.Name()
		if e, ok := old[name]; ok {
			h.entries = append(h.entries, e)
			continue
		}
		if mu := found[i].monitor; mu != nil {
			mu.UseMonitor(h.monitor)
		}
		e := &entry{reg: r, name: name, caps: found[i]}
		h.entries = append(h.entries, e)
		h.tel.metrics.failures.WithLabelValues(name) // exported at 0 from the start
		h.restarts.WithLabelValues(name)
		if r.GatesReadiness && r.NonEssential { // restart.go
			if err := h.monitor.AddCheck(gateName(name), health.Gating(gateCheck(e))); err != nil {
				return err
			}
		}
	}
	return nil
}
