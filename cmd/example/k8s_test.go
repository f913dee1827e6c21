package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"gopkg.in/yaml.v3"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/internal/prestop"
)

// manifest is the part of a Deployment the check reads.
type manifest struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				Grace      int `yaml:"terminationGracePeriodSeconds"`
				Containers []struct {
					Name  string `yaml:"name"`
					Ports []struct {
						Name string `yaml:"name"`
						Port int    `yaml:"containerPort"`
					} `yaml:"ports"`
					Env []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					Lifecycle struct {
						PreStop struct {
							Sleep struct {
								Seconds int `yaml:"seconds"`
							} `yaml:"sleep"`
							HTTPGet struct {
								Path    string `yaml:"path"`
								Port    string `yaml:"port"`
								Headers []struct {
									Name  string `yaml:"name"`
									Value string `yaml:"value"`
								} `yaml:"httpHeaders"`
							} `yaml:"httpGet"`
						} `yaml:"preStop"`
					} `yaml:"lifecycle"`
					Startup   probe `yaml:"startupProbe"`
					Readiness probe `yaml:"readinessProbe"`
					Liveness  probe `yaml:"livenessProbe"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
	Period    int `yaml:"periodSeconds"`
	Threshold int `yaml:"failureThreshold"`
}

func readDeployment(t *testing.T) manifest {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/k8s/orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var m manifest
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			t.Fatal("no Deployment in the manifest")
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Kind == "Deployment" {
			return m
		}
	}
}

func TestKubernetesManifest(t *testing.T) {
	m := readDeployment(t)
	pod := m.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.Port
	}

	// The example's own spec, under the manifest's environment.
	s := spec(defaultKnobs())
	s.Telemetry.Logger = zap.NewNop()
	h, err := host.New(s, host.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}

	_, port, err := net.SplitHostPort(env["PROBE_ADDR"])
	if err != nil {
		t.Fatalf("PROBE_ADDR %q: %v", env["PROBE_ADDR"], err)
	}
	if strconv.Itoa(ports["probes"]) != port {
		t.Errorf("probes port %d does not match PROBE_ADDR %s", ports["probes"], env["PROBE_ADDR"])
	}
	for name, p := range map[string]struct {
		probe probe
		path  string
	}{"startup": {c.Startup, "/startupz"}, "readiness": {c.Readiness, "/readyz"}, "liveness": {c.Liveness, "/livez"}} {
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != "probes" {
			t.Errorf("%s probe = %+v, want %s on the probes port", name, p.probe.HTTPGet, p.path)
		}
	}

	// The startupProbe outlasts the warmup budget with a margin for the container's
	// build and Bind, so that the budget's error (naming the backend a step waits
	// on) ends a start that cannot finish, not the kubelet's restart racing it.
	if window := time.Duration(c.Startup.Period*c.Startup.Threshold) * time.Second; window < h.Budgets().WarmupTimeout+15*time.Second {
		t.Errorf("startupProbe window %s, want at least the warmup budget %s + 15s", window, h.Budgets().WarmupTimeout)
	}

	grace := time.Duration(pod.Grace) * time.Second
	// A preStop sleep comes on top of the exit; a preStop httpGet to /prestop runs the
	// exit's first stages (drain delay, drain hooks), which SIGTERM then skips, so
	// the worst case alone bounds both.
	ps := c.Lifecycle.PreStop
	preStop := time.Duration(ps.Sleep.Seconds) * time.Second
	switch {
	case ps.HTTPGet.Path != "":
		if ps.HTTPGet.Path != prestop.Path || ps.HTTPGet.Port != "probes" {
			t.Errorf("preStop httpGet = %+v, want %s on the probes port", ps.HTTPGet, prestop.Path)
		}
		if preStop != 0 {
			t.Error("preStop has both a sleep and an httpGet")
		}
		// The hook must send the token the container is given, or /prestop refuses
		// it and the drain waits for SIGTERM.
		token := env["SW_PRESTOP_TOKEN"]
		if len(token) < prestop.MinTokenLen {
			t.Errorf("%s %q: want a token of at least %d bytes in the container's env",
				"SW_PRESTOP_TOKEN", token, prestop.MinTokenLen)
		}
		sent := 0
		for _, hd := range ps.HTTPGet.Headers {
			if http.CanonicalHeaderKey(hd.Name) == prestop.Header {
				sent++
				if hd.Value != token {
					t.Errorf("preStop sends %s %q, want %s's value", hd.Name, hd.Value, "SW_PRESTOP_TOKEN")
				}
			}
		}
		if sent != 1 {
			t.Errorf("preStop httpGet sends %d %s headers, want 1", sent, prestop.Header)
		}
		if h.Budgets().DrainDelay < 3*time.Second {
			t.Errorf("SW_DRAIN_DELAY %s: too short for the endpoints to be removed during /prestop", h.Budgets().DrainDelay)
		}
	case preStop == 0:
		t.Error("no preStop: endpoints may still route here when SIGTERM arrives")
	}
	if h.Budgets().TerminationGracePeriod != grace {
		t.Errorf("TERMINATION_GRACE_PERIOD %s differs from terminationGracePeriodSeconds %s", h.Budgets().TerminationGracePeriod, grace)
	}
	w := h.WorstCase()
	if need := preStop + w.Total; need > grace-grace/10 {
		t.Errorf("terminationGracePeriodSeconds %s does not cover preStop %s + worst case %s with 10%% headroom (%s)",
			grace, preStop, w.Total, w)
	}
	t.Logf("grace %s >= preStop %s + worst case %s", grace, preStop, w)
}
