package host

import (
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// modulePath is the framework's module, whose version buildInfo reports.
const modulePath = "github.com/servicewright/servicewright"

// newBuildInfo returns servicewright_build_info: a gauge at 1 whose labels say
// what runs — version (the main module's, "(devel)" for a build outside a module
// version), goversion, revision (vcs.revision, with "-dirty" when vcs.modified; ""
// when the build recorded none) and servicewright (the framework's version). It is
// registered with the Host's other metrics, so the first scrape has it.
func newBuildInfo() prometheus.Collector {
	labels := buildLabels(debug.ReadBuildInfo())
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "servicewright_build_info",
		Help:        "1, labelled with the build: the main module's version, the Go version, the VCS revision and the servicewright version.",
		ConstLabels: labels,
	})
	g.Set(1)
	return g
}

// buildLabels reads bi (ok false: a binary without build information).
func buildLabels(bi *debug.BuildInfo, ok bool) prometheus.Labels {
	l := prometheus.Labels{"version": "", "goversion": "", "revision": "", "servicewright": ""}
	if !ok || bi == nil {
		return l
	}
	l["version"], l["goversion"] = bi.Main.Version, bi.GoVersion
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			l["revision"] = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && l["revision"] != "" {
		l["revision"] += "-dirty"
	}
	if bi.Main.Path == modulePath {
		l["servicewright"] = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			l["servicewright"] = d.Version
			if d.Replace != nil {
				l["servicewright"] = d.Replace.Version
			}
		}
	}
	return l
}
