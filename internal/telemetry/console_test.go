package telemetry

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func consoleLogger(colour bool) (*zap.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	core := zapcore.NewCore(encoder(logConsole, colour), zapcore.AddSync(&buf), zapcore.DebugLevel)
	return zap.New(core), &buf
}

func TestConsoleEncoding(t *testing.T) {
	t.Run("service and instance are not repeated on every line", func(t *testing.T) {
		log, buf := consoleLogger(false)
		log.Info("starting", zap.String("service", "orders"), zap.String("instance", "r1"))
		log = log.With(zap.String("service", "orders")).With(zap.String("instance", "r1"))
		log.Info("stage", zap.String("stage", "serve"))
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("lines: %q", lines)
		}
		if !strings.Contains(lines[0], `"service": "orders"`) || !strings.Contains(lines[0], `"instance": "r1"`) {
			t.Errorf("the start line does not name the service and instance: %q", lines[0])
		}
		if strings.Contains(lines[1], "orders") || strings.Contains(lines[1], "r1") {
			t.Errorf("a later line repeats them: %q", lines[1])
		}
		if !strings.Contains(lines[1], `"stage": "serve"`) {
			t.Errorf("a later line lost its own field: %q", lines[1])
		}
	})

	t.Run("colour only when asked (a terminal)", func(t *testing.T) {
		log, buf := consoleLogger(false)
		log.Warn("plain")
		if strings.Contains(buf.String(), "\x1b[") {
			t.Errorf("colour codes written to a non-terminal: %q", buf.String())
		}
		log, buf = consoleLogger(true)
		log.Warn("coloured")
		if !strings.Contains(buf.String(), "\x1b[") {
			t.Errorf("no colour on a terminal: %q", buf.String())
		}
	})

	t.Run("the shutdown report is a block, a figure a line", func(t *testing.T) {
		log, buf := consoleLogger(false)
		log.Info(ReportMessage, zap.String("result", "success"), zap.Int("exit_code", 0), zap.String("drain", "1.2s"),
			zap.Any("drains", []struct {
				Entrypoint string `json:"entrypoint"`
			}{{Entrypoint: "http"}}), zap.Strings("overran", []string{"a", "b"}))
		out := buf.String()
		for _, want := range []string{"\n    result: success\n", "\n    exit_code: 0\n", "\n    drain: 1.2s\n", `- {"entrypoint":"http"`, "    overran:\n      - a\n      - b"} {
			if !strings.Contains(out, want) {
				t.Errorf("report %q lacks %q", out, want)
			}
		}
	})
}
