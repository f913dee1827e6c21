package e2e

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servicewright/servicewright/internal/proctest"
)

// secret is the password every case below carries; no output may contain it.
const secret = "s3cretpw"

// TestNoSecretInOutput runs the example with a password in each variable that may
// carry one, in every shape a user may write it (an empty user, percent-escapes, IPv6
// hosts, key=value DSNs, query parameters, rediss, header lists, endpoints with user
// info), malformed and well-formed but unreachable: no stderr line and no /readyz or
// /debug/lifecycle body contains the password, and a malformed value exits 78 naming
// its variable.
//
// A broker list has no place for credentials (its entries are host:port), so every
// KAFKA_BROKERS value that carries one is malformed; the unreachable Kafka case is a
// well-formed list next to another variable's secret.
func TestNoSecretInOutput(t *testing.T) {
	malformed := []struct{ name, value string }{
		{"REDIS_URL", "redis://u:" + secret + "@[bad/"},
		{"REDIS_URL", "redis://u:" + secret + "@127.0.0.1:99999/0"},
		{"REDIS_URL", "http://u:" + secret + "@127.0.0.1:6379"},
		{"REDIS_URL", "redis://:" + secret + "@[bad/"},
		{"REDIS_URL", "redis://:" + secret + "@127.0.0.1:99999/0"},
		{"REDIS_URL", "rediss://:" + secret + "@[::1:6379/0"},
		{"REDIS_URL", "redis://:" + secret + "@::1:6379/0"},
		{"REDIS_URL", "redis://:%zz" + secret + "@127.0.0.1:6379"},
		{"REDIS_URL", "redis://127.0.0.1:bad/0?password=" + secret},
		{"DATABASE_URL", "postgres://u:" + secret + "@127.0.0.1:badport/db"},
		{"DATABASE_URL", "postgres://u:" + secret + "@[bad/db"},
		{"DATABASE_URL", "postgres://u:%zz" + secret + "@127.0.0.1/db"},
		{"DATABASE_URL", "postgres://u@127.0.0.1:x/db?password=" + secret},
		{"DATABASE_URL", "host=127.0.0.1 port=x user=u password=" + secret},
		{"DATABASE_URL", "host=127.0.0.1 user=u password='" + secret},
		{"DATABASE_URL", "host=127.0.0.1 user=u password=" + secret + " sslmode=bogus"},
		{"KAFKA_BROKERS", "u:" + secret + "@127.0.0.1:1"},
		{"KAFKA_BROKERS", ":" + secret + "@127.0.0.1:1"},
		{"KAFKA_BROKERS", "127.0.0.1:9092,kafka://u:" + secret + "@127.0.0.1:1"},
		{"SENTRY_DSN", "https://" + secret + "@sentry.example"},
		{"SENTRY_DSN", "https://" + secret + "@[sentry.example/1"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer " + secret + ",x-key"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%zz" + secret},
		{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Bearer " + secret + "=x"},
		{"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "api-key=%zz" + secret},
		{"OTEL_EXPORTER_OTLP_LOGS_HEADERS", "api-key " + secret},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://u:" + secret + "@127.0.0.1:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://u:" + secret + "@[127.0.0.1:4318"},
	}
	for _, c := range malformed {
		t.Run("malformed "+c.name+"="+c.value, func(t *testing.T) {
			t.Parallel()
			p, _ := startExample(t, c.name+"="+c.value)
			if code := exitCode(t, p); code != 78 {
				t.Errorf("exit %d, want 78", code)
			}
			out := strings.Join(p.Lines(), "\n")
			if !strings.Contains(out, c.name) {
				t.Errorf("no line names %s", c.name)
			}
			assertNoSecret(t, "stderr", out)
		})
	}

	unreachable := []struct {
		what string
		env  []string
	}{
		{"REDIS_URL", []string{"REDIS_URL=redis://u:" + secret + "@127.0.0.1:1/0"}},
		{"REDIS_URL wrong password", []string{"REDIS_URL=redis://u:" + secret + "@" + env.Redis(t).Addr() + "/0"}},
		{"DATABASE_URL", []string{"DATABASE_URL=postgres://u:" + secret + "@127.0.0.1:1/db?connect_timeout=1"}},
		{"DATABASE_URL DSN", []string{"DATABASE_URL=host=127.0.0.1 port=1 user=u dbname=db password=" + secret + " connect_timeout=1"}},
		{"KAFKA_BROKERS", []string{"KAFKA_BROKERS=127.0.0.1:1", "REDIS_URL=redis://u:" + secret + "@127.0.0.1:1/0"}},
		{"REDIS_URL empty user", []string{"REDIS_URL=redis://:" + secret + "@127.0.0.1:1/0"}},
		{"REDIS_URL empty user, wrong password", []string{"REDIS_URL=redis://:" + secret + "@" + env.Redis(t).Addr() + "/0"}},
		{"REDIS_URL rediss", []string{"REDIS_URL=rediss://:" + secret + "@127.0.0.1:1/0"}},
		{"REDIS_URL IPv6", []string{"REDIS_URL=redis://:" + secret + "@[::1]:1/0"}},
		{"DATABASE_URL query password", []string{"DATABASE_URL=postgres://u@127.0.0.1:1/db?connect_timeout=1&password=" + secret}},
		{"DATABASE_URL percent-escape, IPv6", []string{"DATABASE_URL=postgres://u:p%40" + secret + "@[::1]:1/db?connect_timeout=1"}},
		{"DATABASE_URL DSN, refused role", []string{"DATABASE_URL=host=127.0.0.1 port=" + strconv.Itoa(env.Postgres(t).Port()) +
			" user=nosuchrole dbname=postgres sslmode=disable connect_timeout=1 password=" + secret}},
		{"SENTRY_DSN", []string{"SENTRY_DSN=http://" + secret + "@127.0.0.1:1/1"}},
		{"OTLP headers", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_METRICS_EXPORTER=otlp",
			"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20" + secret + ",x-key=" + secret,
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS=x-trace-key=" + secret, "OTEL_EXPORTER_OTLP_METRICS_HEADERS=x-metric-key=" + secret}},
		{"OTLP gRPC headers", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
			"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20" + secret}},
		{"OTLP endpoint query", []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:1/v1/traces?token=" + secret}},
	}
	for _, c := range unreachable {
		t.Run("unreachable "+c.what, func(t *testing.T) {
			t.Parallel()
			p, probe := startExample(t, c.env...)
			bodies := pollBodies(t, p, probe)
			early := exited(p)
			_ = p.Signal(syscall.SIGTERM)
			_ = exitCode(t, p)
			if len(bodies) == 0 && !early {
				t.Error("the probes never answered, though the process ran")
			}
			for _, b := range bodies {
				assertNoSecret(t, "probe body", b)
			}
			assertNoSecret(t, "stderr", strings.Join(p.Lines(), "\n"))
		})
	}
}

// pollBodies reads /readyz and /debug/lifecycle until the process has been up for
// a while past its first answer (or has exited, as a failed startup does).
func pollBodies(t *testing.T, p *proctest.Proc, probe string) []string {
	t.Helper()
	var bodies []string
	var answered time.Time
	c := &http.Client{Timeout: 3 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.Done():
			return bodies
		case <-time.After(100 * time.Millisecond):
		}
		for _, path := range []string{"/readyz", "/debug/lifecycle"} {
			resp, err := c.Get("http://" + probe + path)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			bodies = append(bodies, string(b))
			if answered.IsZero() {
				answered = time.Now()
			}
		}
		// Past warmup, the checks have had time to fail and say why.
		if !answered.IsZero() && time.Since(answered) > 3*time.Second {
			return bodies
		}
	}
	return bodies
}

func exited(p *proctest.Proc) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

func assertNoSecret(t *testing.T, where, s string) {
	t.Helper()
	if i := strings.Index(s, secret); i >= 0 {
		from, to := max(i-200, 0), min(i+100, len(s))
		t.Errorf("%s contains the password: …%s…", where, s[from:to])
	}
}
