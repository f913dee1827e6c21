package transport

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/servicewright/servicewright/entrypoint"
)

// A nil listener is a problem naming WithListener; a second WithTelemetry wins
// field by field and keeps what the first gave for the rest.
func TestOptions(t *testing.T) {
	var o Options
	o.UseListener(nil)
	if err := o.Problems.Err(); err == nil || !strings.Contains(err.Error(), "WithListener") {
		t.Errorf("UseListener(nil) problems = %v, want one naming WithListener", err)
	}

	first, second := zap.NewNop(), zap.NewExample()
	reg := prometheus.NewRegistry()
	o.UseTelemetry(entrypoint.Telemetry{Logger: first, Registerer: reg})
	o.UseTelemetry(entrypoint.Telemetry{Logger: second})
	if o.Given.Logger != second || o.Given.Registerer != reg {
		t.Errorf("Given = %+v, want the second logger and the first registerer", o.Given)
	}
}
