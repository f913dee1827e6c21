package host

import (
	"runtime/debug"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestBuildLabels(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "example.com/orders", Version: "v1.4.2"},
		Deps:      []*debug.Module{{Path: modulePath, Version: "v0.9.0"}},
		Settings:  []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}},
	}
	want := prometheus.Labels{"version": "v1.4.2", "goversion": "go1.26.0", "revision": "abc123-dirty", "servicewright": "v0.9.0"}
	if got := buildLabels(bi, true); !equal(got, want) {
		t.Errorf("buildLabels = %v, want %v", got, want)
	}
	bi.Deps[0].Replace = &debug.Module{Path: "../sw", Version: ""}
	bi.Settings = bi.Settings[:1]
	want["revision"], want["servicewright"] = "abc123", ""
	if got := buildLabels(bi, true); !equal(got, want) {
		t.Errorf("buildLabels (replaced, clean) = %v, want %v", got, want)
	}
	if got := buildLabels(nil, false); len(got) != 4 || got["version"] != "" {
		t.Errorf("buildLabels without build information = %v, want the four labels empty", got)
	}
}

func equal(a, b prometheus.Labels) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
