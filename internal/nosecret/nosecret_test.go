package nosecret_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/otlpenv"
	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/pgkit"
	"github.com/servicewright/servicewright/rediskit"
	"github.com/servicewright/servicewright/sentrykit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// marker is the credential: each input is before+marker+after, so the corpus places
// it as a password, a user, a query parameter, a header value or key, a host.
const marker = "Mk7SECRETq9"

var otlpVars = []string{
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
}

// FuzzNoSecret hands one value, holding the marker, to every parse path of a
// credential-bearing variable and asserts that the marker is in none of what comes
// out: the error's text under %v, %+v and %#v, and every line OpenTelemetry's
// diagnostics write (JSON-encoded, as the service logs them), whether the value is
// malformed or well-formed.
func FuzzNoSecret(f *testing.F) {
	var logs bytes.Buffer
	otlpenv.Diagnostics(zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.AddSync(&logs), zap.DebugLevel)))
	f.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })

	f.Fuzz(func(t *testing.T, before, after string) {
		if len(before)+len(after) > 2048 {
			t.Skip()
		}
		v := before + marker + after
		logs.Reset()
		var outs []string
		errText := func(what string, err error) {
			if err != nil {
				outs = append(outs, what+": "+fmt.Sprintf("%v | %+v | %#v", err, err, err))
			}
		}

		_, err := rediskit.ParseURL("REDIS_URL", v)
		errText("rediskit.ParseURL", err)
		_, err = pgkit.ParseConfig("DATABASE_URL", v)
		errText("pgkit.ParseConfig", err)
		_, err = pgkit.NewLock(pgkit.LockConfig{URL: v})
		errText("pgkit.NewLock", err)

		for _, b := range strings.Split(v, ",") {
			if r := kafkakit.CheckBroker(strings.TrimSpace(b)); r != "" {
				outs = append(outs, "kafkakit.CheckBroker: "+r)
			}
		}
		p, err := kafkakit.NewProducer(kafkakit.ProducerConfig{Brokers: strings.Split(v, ","), Topic: "t"})
		errText("kafkakit.NewProducer", err)
		if err == nil {
			_ = p.Close()
		}

		rep, err := sentrykit.New(sentrykit.Config{DSN: v})
		errText("sentrykit.New", err)
		if err == nil {
			rep.Close()
		}
		rep, err = sentrykit.New(sentrykit.Config{}, sentrykit.WithEnv(func(k string) (string, bool) {
			return v, k == "SENTRY_DSN"
		}))
		errText("sentrykit.New(SENTRY_DSN)", err)
		if err == nil {
			rep.Close()
		}

		var l fault.Problems
		otlpenv.Check(func(k string) (string, bool) { return v, true }, &l)
		errText("otlpenv.Check", l.Err())

		// Past the check or not, OpenTelemetry's own reading of the value, and its
		// errors, reach the log only through Diagnostics. The Host builds an exporter,
		// and echoes its error, only past the check.
		for _, err := range exporterReads(t, v) {
			if l.Len() == 0 {
				errText("autoexport", err)
			}
		}
		otel.Handle(fmt.Errorf("failed to send to %s: %w", v, &url.Error{Op: "Post", URL: v, Err: errors.New(v)}))
		outs = append(outs, "log: "+logs.String())

		for _, o := range outs {
			if i := strings.Index(o, marker); i >= 0 {
				t.Errorf("the marker is out: %q", o[max(i-120, 0):min(i+len(marker)+40, len(o))])
			}
		}
	})
}

// exporterReads builds and shuts down OpenTelemetry's OTLP span exporter with v as
// each header variable and, separately, as the endpoint: what it logs of them goes
// to the buffer Diagnostics writes to. It returns the errors of the builds.
func exporterReads(t *testing.T, v string) []error {
	t.Helper()
	if strings.ContainsRune(v, 0) {
		return nil // no environment variable holds a NUL
	}
	var errs []error
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS": v,
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS": v},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": v},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": v, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		for _, k := range otlpVars {
			t.Setenv(k, env[k])
		}
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", env["OTEL_EXPORTER_OTLP_PROTOCOL"])
		t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
		exp, err := autoexport.NewSpanExporter(context.Background())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_ = exp.Shutdown(context.Background())
	}
	return errs
}
