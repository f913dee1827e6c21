package fault_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/servicewright/servicewright/fault"
)

// A problem read from the environment names the variable and the field, and keeps
// both through Merge.
func TestProblemNamesVariable(t *testing.T) {
	var inner fault.Problems
	inner.AddEnvf("Addr", "PROBE_ADDR", "port must be a number, got %q", "x")
	var l fault.Problems
	l.AddEnvf("Addr", "HTTP_ADDR", "must be host:port")
	l.Merge("Probes", inner.Err())
	var ce *fault.ConfigError
	if !errors.As(l.Err(), &ce) || len(ce.Problems) != 2 {
		t.Fatalf("Err = %v", l.Err())
	}
	if p := ce.Problems[1]; p.Field != "Probes.Addr" || p.Variable != "PROBE_ADDR" {
		t.Errorf("merged problem %+v, want field Probes.Addr from PROBE_ADDR", p)
	}
	msg := ce.Error()
	for _, want := range []string{"HTTP_ADDR (Addr): must be host:port", `PROBE_ADDR (Probes.Addr): port must be a number, got "x"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not contain %q", msg, want)
		}
	}
	if got := (fault.Problem{Field: "X", Variable: "X", Reason: "r"}).String(); got != "X: r" {
		t.Errorf("same field and variable: %q", got)
	}
}
