package host_test

import (
	"runtime"
	"testing"

	"github.com/servicewright/servicewright/host"
)

// TestBuildInfo: the first gather of a Host's registry, before anything ran, has
// servicewright_build_info at 1 with the Go version of this binary.
func TestBuildInfo(t *testing.T) {
	h, err := host.New(host.AppSpec{ServiceName: "orders", Telemetry: quiet(), Probes: probesOff()})
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := h.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "servicewright_build_info" {
			continue
		}
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if m.GetGauge().GetValue() != 1 || labels["goversion"] != runtime.Version() {
			t.Fatalf("servicewright_build_info %v = %v, want 1 with goversion %s", labels, m.GetGauge().GetValue(), runtime.Version())
		}
		for _, k := range []string{"version", "revision", "servicewright"} {
			if _, ok := labels[k]; !ok {
				t.Errorf("no %s label: %v", k, labels)
			}
		}
		return
	}
	t.Fatal("no servicewright_build_info in the first gather")
}
