package main

import (
	"errors"
	"testing"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
)

// TestAddrsNamedByVariable: every bad listen address is one problem of the one
// ConfigError, naming the variable the user set and the field it sets.
func TestAddrsNamedByVariable(t *testing.T) {
	t.Setenv("HTTP_ADDR", "8080")             // no colon
	t.Setenv("GRPC_ADDR", ":99999")           // port out of range
	t.Setenv("PROBE_ADDR", "localhost:probe") // port not a number
	_, err := readKnobs()
	var ce *fault.ConfigError
	if !errors.As(err, &ce) || host.ExitCode(err) != host.ExitConfig {
		t.Fatalf("readKnobs = %v, want a *fault.ConfigError (exit 78)", err)
	}
	want := map[string]string{"HTTP_ADDR": "httpentry.Config.Addr", "GRPC_ADDR": "grpcentry.Config.Addr", "PROBE_ADDR": "Probes.Addr"}
	for _, p := range ce.Problems {
		if want[p.Variable] != p.Field {
			t.Errorf("problem %+v: field %q, want %q", p, p.Field, want[p.Variable])
		}
		delete(want, p.Variable)
	}
	if len(want) != 0 {
		t.Errorf("no problem names %v: %v", want, err)
	}

	for _, ok := range []string{":0", "127.0.0.1:8080", "[::1]:9090", "localhost:65535"} {
		t.Setenv("HTTP_ADDR", ok)
		t.Setenv("GRPC_ADDR", "")
		t.Setenv("PROBE_ADDR", "")
		if _, err := readKnobs(); err != nil {
			t.Errorf("HTTP_ADDR=%s: %v", ok, err)
		}
	}
}
