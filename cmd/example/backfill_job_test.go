package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"gopkg.in/yaml.v3"

	"github.com/servicewright/servicewright/host"
)

// job is the part of a Job the check reads.
type job struct {
	Kind string `yaml:"kind"`
	Spec struct {
		BackoffLimit          int `yaml:"backoffLimit"`
		ActiveDeadlineSeconds int `yaml:"activeDeadlineSeconds"`
		PodFailurePolicy      struct {
			Rules []struct {
				Action      string `yaml:"action"`
				OnExitCodes *struct {
					ContainerName string `yaml:"containerName"`
					Operator      string `yaml:"operator"`
					Values        []int  `yaml:"values"`
				} `yaml:"onExitCodes"`
				OnPodConditions []struct {
					Type string `yaml:"type"`
				} `yaml:"onPodConditions"`
			} `yaml:"rules"`
		} `yaml:"podFailurePolicy"`
		Template struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Grace         int    `yaml:"terminationGracePeriodSeconds"`
				Containers    []struct {
					Name    string   `yaml:"name"`
					Args    []string `yaml:"args"`
					Startup struct {
						Period    int `yaml:"periodSeconds"`
						Threshold int `yaml:"failureThreshold"`
					} `yaml:"startupProbe"`
					Env []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func readJob(t *testing.T) job {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/k8s/backfill-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var j job
		if err := dec.Decode(&j); errors.Is(err, io.EOF) {
			t.Fatal("no Job in the manifest")
		} else if err != nil {
			t.Fatal(err)
		}
		if j.Kind == "Job" {
			return j
		}
	}
}

func TestBackfillJobManifest(t *testing.T) {
	j := readJob(t)
	pod := j.Spec.Template.Spec
	if pod.RestartPolicy != "Never" {
		t.Errorf("restartPolicy %q, want Never (a podFailurePolicy needs it, and each retry is a fresh pod)", pod.RestartPolicy)
	}
	if j.Spec.BackoffLimit <= 0 {
		t.Errorf("backoffLimit %d: a retriable failure would never be retried", j.Spec.BackoffLimit)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Equal(c.Args, []string{"backfill"}) {
		t.Errorf("args %v, want [backfill]", c.Args)
	}

	var failJob []int
	ignoresDisruption := false
	for _, r := range j.Spec.PodFailurePolicy.Rules {
		switch {
		case r.Action == "FailJob" && r.OnExitCodes != nil:
			if r.OnExitCodes.Operator != "In" || r.OnExitCodes.ContainerName != c.Name {
				t.Errorf("FailJob rule %+v: want operator In on container %q", r.OnExitCodes, c.Name)
			}
			failJob = append(failJob, r.OnExitCodes.Values...)
		case r.Action == "Ignore":
			for _, pc := range r.OnPodConditions {
				ignoresDisruption = ignoresDisruption || pc.Type == "DisruptionTarget"
			}
		}
	}
	for _, code := range []int{backfillPermanentExitCode, host.ExitConfig} {
		if !slices.Contains(failJob, code) {
			t.Errorf("FailJob codes %v lack %d: a failure no retry can fix would spend the backoffLimit", failJob, code)
		}
	}
	for _, code := range []int{host.ExitOK, host.ExitFailure, host.ExitInterrupted} {
		if slices.Contains(failJob, code) {
			t.Errorf("FailJob codes %v include %d, which must be retried (or is success)", failJob, code)
		}
	}
	if !ignoresDisruption {
		t.Error("no Ignore rule on DisruptionTarget: an evicted pod would count against backoffLimit")
	}

	// The backfill's own spec, under the manifest's environment.
	env := map[string]string{}
	for _, e := range c.Env {
		if e.Value != "" {
			env[e.Name] = e.Value
		}
	}
	s := backfillSpec(defaultKnobs(), backfillKnobs{n: 1000})
	s.Telemetry.Logger = zap.NewNop()
	h, err := host.New(s, host.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	grace := time.Duration(pod.Grace) * time.Second
	if h.Budgets().TerminationGracePeriod != grace {
		t.Errorf("TERMINATION_GRACE_PERIOD %s differs from terminationGracePeriodSeconds %s", h.Budgets().TerminationGracePeriod, grace)
	}
	w := h.WorstCase()
	if !w.Fits(grace) {
		t.Errorf("terminationGracePeriodSeconds %s does not cover the worst case %s with 10%% headroom", grace, w)
	}
	if deadline := time.Duration(j.Spec.ActiveDeadlineSeconds) * time.Second; deadline <= grace {
		t.Errorf("activeDeadlineSeconds %s must exceed the grace period %s", deadline, grace)
	}
	if window := time.Duration(c.Startup.Period*c.Startup.Threshold) * time.Second; window <= h.Budgets().WarmupTimeout {
		t.Errorf("the startup probe gives up after %s, before the %s warmup budget names the stuck step", window, h.Budgets().WarmupTimeout)
	}
	t.Logf("grace %s >= worst case %s; FailJob on %v", grace, w, failJob)
}
