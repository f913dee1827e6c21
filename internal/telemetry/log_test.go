package telemetry

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestJSONDurations: in the JSON encoding every duration is a number of seconds under
// its key plus DurationSuffix — a line's fields and a logger's With fields — and
// a nested one is a number of seconds; the console encoding keeps "622µs".
func TestJSONDurations(t *testing.T) {
	var out bytes.Buffer
	log := zap.New(zapcore.NewCore(encoder(logJSON, false), zapcore.AddSync(&out), zapcore.InfoLevel))
	log.With(zap.Duration("budget", 2*time.Second)).Info("x", zap.Duration("took", 622*time.Microsecond),
		zap.Object("nested", zapcore.ObjectMarshalerFunc(func(e zapcore.ObjectEncoder) error {
			e.AddDuration("wait", 1500*time.Millisecond)
			return nil
		})))
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if line["took_seconds"] != 0.000622 || line["budget_seconds"] != 2.0 || line["took"] != nil {
		t.Errorf("durations not numbers of seconds under the suffixed key: %s", out.String())
	}
	if n, _ := line["nested"].(map[string]any); n["wait"] != 1.5 {
		t.Errorf("nested duration %v, want 1.5", line["nested"])
	}

	out.Reset()
	console := zap.New(zapcore.NewCore(encoder(logConsole, false), zapcore.AddSync(&out), zapcore.InfoLevel))
	console.Info("x", zap.Duration("took", 622*time.Microsecond))
	if !strings.Contains(out.String(), "622µs") {
		t.Errorf("console line %q, want the duration for a person", out.String())
	}
}
