package host_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/internal/prestop"
)

const pprofToken = "fedcba9876543210-profiles"

// getPprof sends GET path to the probe listener with the profiling token (none when "").
func getPprof(t *testing.T, h *host.Host, path, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+h.ProbeAddr()+path, nil)
	if token != "" {
		req.Header.Set(prestop.PprofHeader, token)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// TestPprof: with a profiling token the probe listener serves the runtime's profiles
// to a caller with it, and refuses (403, counted) one without it or with another
// token — the PreStop token included; without a token the paths do not exist.
func TestPprof(t *testing.T) {
	t.Run("off without a token", func(t *testing.T) {
		var runs atomic.Int32
		h, stop := preStopHost(t, &runs, prometheus.NewRegistry(), zap.NewNop())
		defer stop()
		if code, _ := getPprof(t, h, "/debug/pprof"+"/goroutine", pprofToken); code != http.StatusNotFound {
			t.Errorf("GET %s/goroutine without a configured token = %d, want 404", "/debug/pprof", code)
		}
	})
	t.Run("served with the token, refused and counted without", func(t *testing.T) {
		var runs atomic.Int32
		reg := prometheus.NewRegistry()
		h, stop := preStopHost(t, &runs, reg, zap.NewNop(), "SW_PPROF_TOKEN", pprofToken, "SW_PRESTOP_TOKEN", testToken)
		defer stop()
		code, body := getPprof(t, h, "/debug/pprof", pprofToken)
		if code != http.StatusOK || !bytes.Contains(body, []byte("goroutine?debug=1")) {
			t.Errorf("GET %s = %d %q, want 200 and the list of profiles", "/debug/pprof", code, body)
		}
		code, body = getPprof(t, h, "/debug/pprof"+"/goroutine?debug=1", pprofToken)
		if code != http.StatusOK || !bytes.Contains(body, []byte("goroutine profile:")) {
			t.Errorf("GET goroutine?debug=1 = %d %.80q, want 200 and the profile", code, body)
		}
		code, body = getPprof(t, h, "/debug/pprof"+"/profile?seconds=1", pprofToken)
		if code != http.StatusOK || len(body) == 0 {
			t.Errorf("GET profile?seconds=1 = %d with %d bytes, want 200 and a CPU profile", code, len(body))
		}
		if code, _ := getPprof(t, h, "/debug/pprof"+"/profile?seconds=3600", pprofToken); code != http.StatusBadRequest {
			t.Errorf("GET profile?seconds=3600 = %d, want 400", code)
		}
		for _, token := range []string{"", testToken} { // none, and the PreStop token
			if code, _ := getPprof(t, h, "/debug/pprof"+"/heap", token); code != http.StatusForbidden {
				t.Errorf("GET heap with %q = %d, want 403", token, code)
			}
		}
		if got := refusedPprof(t, reg); got["no_credential"] != 1 || got["wrong_credential"] != 1 {
			t.Errorf("servicewright_pprof_refused_total = %v, want one of each reason", got)
		}
	})
	t.Run("a bad token is a ConfigError naming the variable", func(t *testing.T) {
		_, err := host.New(host.AppSpec{ServiceName: "x", Telemetry: quiet()}, env("SW_PPROF_TOKEN", "short"))
		var ce *fault.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "SW_PPROF_TOKEN") {
			t.Fatalf("New with a short profiling token = %v, want a ConfigError naming %s", err, "SW_PPROF_TOKEN")
		}
	})
}

// refusedPprof returns servicewright_pprof_refused_total by reason.
func refusedPprof(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "servicewright_pprof_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}
