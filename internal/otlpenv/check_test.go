package otlpenv_test

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
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "tok-s3cret"

func check(env map[string]string) error {
	var l fault.Problems
	otlpenv.Check(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &l)
	return l.Err()
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer " + token + ",x-key", "entry 2 has no '='"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%zz" + token, "entry 1: malformed percent-escape"},
		{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Bearer " + token + "=x", "entry 1: the key must be"},
		{"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "api-key=" + token + "%0a", "control character"},
		{"OTEL_EXPORTER_OTLP_LOGS_HEADERS", "api-key=" + token + ",", "entry 2 has no '='"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://u:" + token + "@collector:4318", "must not carry user info"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://u:" + token + "@[collector", "not a URL"},
		{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "grpc://" + token + ":4317", "scheme must be http or https"},
	} {
		err := check(map[string]string{tc.name: tc.value})
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || len(ce.Problems) != 1 || ce.Problems[0].Variable != tc.name || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: %v, want one problem naming it, saying %q", tc.name, tc.value, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("%s: the error quotes the value: %v", tc.name, err)
		}
	}
	for _, ok := range []map[string]string{
		nil,
		{"OTEL_EXPORTER_OTLP_HEADERS": " authorization = Bearer%20" + token + " , x-key=a%2Cb "},
		{"OTEL_EXPORTER_OTLP_HEADERS": "   "},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://[::1]:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c:4318/v1/traces"},
	} {
		if err := check(ok); err != nil {
			t.Errorf("%v: %v, want none", ok, err)
		}
	}
}

func TestDiagnosticsWithholdValues(t *testing.T) {
	var buf bytes.Buffer
	otlpenv.Diagnostics(zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.AddSync(&buf), zap.DebugLevel)))
	t.Cleanup(func() { otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {})) })

	// OpenTelemetry's own exporter reading a malformed header list, as it would were
	// Check not called first, and a failed export as its exporters report one.
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%zz"+token+",x-"+token+",Bearer "+token+"=x")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://u:"+token+"@[c")
	exp, err := autoexport.NewSpanExporter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = exp.Shutdown(context.Background())
	otel.Handle(fmt.Errorf("failed to send to %s: %w", "http://u:"+token+"@c/v1/traces",
		&url.Error{Op: "Post", URL: "http://u:" + token + "@c", Err: errors.New("refused")}))

	out := buf.String()
	if strings.Contains(out, token) {
		t.Errorf("the log holds the value:\n%s", out)
	}
	for _, want := range []string{`"escape header value"`, `"withheld":["value"]`, `"parse headers"`, `"parse url"`,
		`"error_types":"*fmt.wrapError > *url.Error > *errors.errorString"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
}
