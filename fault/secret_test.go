package fault_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/servicewright/servicewright/fault"
)

func TestSecretNeverPrints(t *testing.T) {
	const value = "s3cretpw"
	s := fault.Secret(value)
	type config struct {
		URL fault.Secret
	}
	c := config{URL: s}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s"} {
		outs = append(outs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, c), fmt.Sprintf(verb, &c))
	}
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(j))

	var buf bytes.Buffer
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zap.DebugLevel))
	log.Info("config", zap.Any("url", s), zap.Any("config", c), zap.Stringer("s", s), zap.Reflect("r", c))
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "url", s, "config", c)
	outs = append(outs, buf.String())

	for _, o := range outs {
		if strings.Contains(o, value) || !strings.Contains(o, "[secret]") {
			t.Errorf("%q: want the mask and not the value", o)
		}
	}
	if s.Reveal() != value {
		t.Errorf("Reveal() = %q", s.Reveal())
	}
}

func TestURLProblemQuotesNothing(t *testing.T) {
	const pw = "s3cretpw"
	for _, tc := range []struct{ in, want string }{
		{"redis://:" + pw + "@[bad/", "missing ']'"},
		{"redis://:" + pw + "@h:99999/0", "port must be"},
		{"redis://:" + pw + "@h:x/0", "port must be"},
		{"redis://:%zz" + pw + "@h", "percent-escape"},
		{"redis://:" + pw + "@::1:6379", "IPv6"},
		{"redis://:" + pw + "@a b", "invalid character in the host"},
		{"redis://u:p " + pw + "@h", "percent-escaped"},
		{pw + ":1", "missing scheme"},
		{"redis://:" + pw + "@[::1]:6379/0", ""},
		{"redis://:" + pw + "@h", ""},
	} {
		got := fault.URLProblem(tc.in)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || strings.Contains(got, pw) {
			t.Errorf("URLProblem(%q) = %q, want one saying %q", tc.in, got, tc.want)
		}
	}
}
