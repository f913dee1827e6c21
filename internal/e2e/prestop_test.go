package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"gopkg.in/yaml.v3"

	"github.com/servicewright/servicewright/internal/prestop"
	"github.com/servicewright/servicewright/internal/telemetry"
)

// TestPreStopEndpoint: GET /prestop on the probe port drains ahead of the stop —
// readiness answers 503 draining, the drain delay passes, the drain hooks run once —
// while the service keeps serving; SIGTERM then exits 0 without waiting the delay or
// running the phases again.
//
// It calls /prestop as the manifest's preStop hook does (testdata/k8s/orders.yaml),
// with the token the manifest gives the container.
func TestPreStopEndpoint(t *testing.T) {
	// A drain delay long enough that "at once" (the second /prestop, the shutdown's
	// drain_delay: both half of it at most) is a sanity bound on a loaded machine:
	// each takes milliseconds, and not skipping the delay would take all of it.
	const delay = 3 * time.Second
	httpAddr := freeAddr(t)
	hook, token := manifestPreStop(t)
	p, probe := startExample(t, "HTTP_ADDR="+httpAddr, "SW_DRAIN_DELAY="+delay.String(), "SW_PRESTOP_TOKEN="+token)
	mustLog(t, p, map[string]string{"msg": "service ready"}, 20*time.Second)
	base := "http://" + probe

	began := time.Now()
	code, body := hook(base)
	took := time.Since(began)
	if code != 200 || !strings.Contains(body, `"draining"`) {
		t.Fatalf("GET /prestop = %d %s", code, body)
	}
	if took < delay {
		t.Errorf("/prestop answered after %s, before the %s drain delay had passed", took, delay)
	}
	if code, body := getText(t, base+"/readyz"); code != 503 || !strings.Contains(body, `"draining"`) {
		t.Errorf("/readyz after /prestop = %d %s, want 503 draining", code, body)
	}
	if phaseRuns(p.Entries()) != 1 {
		t.Errorf("drain hook ran %d times by the end of /prestop, want 1", phaseRuns(p.Entries()))
	}
	if code, _ := getText(t, "http://"+httpAddr+"/hello"); code != 200 {
		t.Errorf("GET /hello after /prestop = %d: the service must serve until the stop", code)
	}
	again := time.Now()
	if code, _ := hook(base); code != 200 || time.Since(again) > delay/2 {
		t.Errorf("a second /prestop = %d after %s, want 200 at once", code, time.Since(again))
	}
	if a := p.Find(map[string]string{"msg": "prestop: accepted", "caller": "http"}); a == nil || a["user_agent"] != "kube-lifecycle/test" ||
		!strings.HasPrefix(fmt.Sprint(a["remote_addr"]), "127.0.0.1:") {
		t.Errorf("accepted PreStop logged as %v, want its caller's address and user agent", a)
	}
	req, _ := http.NewRequest(http.MethodDelete, base+"/prestop", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 405 {
		t.Errorf("DELETE /prestop = %v %v, want 405", resp, err)
	} else {
		resp.Body.Close()
	}

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, p); code != 0 {
		t.Fatalf("exit %d after /prestop and SIGTERM, want 0", code)
	}
	if n := phaseRuns(p.Entries()); n != 1 {
		t.Errorf("drain hook ran %d times in all, want once", n)
	}
	if p.Find(map[string]string{"msg": "readiness withdrawn; waiting the drain delay with every entrypoint accepting"}) != nil {
		t.Error("the shutdown waited the drain delay again after /prestop had")
	}
	rep := p.Find(map[string]string{"msg": "shutdown report"})
	if rep == nil || rep["result"] != "success" {
		t.Fatalf("shutdown report %v, want success", rep)
	}
	if s, ok := rep["drain_delay"+telemetry.DurationSuffix].(float64); !ok || time.Duration(s*float64(time.Second)) >= delay/2 {
		t.Errorf("the shutdown's drain_delay = %v s, want next to nothing after /prestop", rep["drain_delay"+telemetry.DurationSuffix])
	}
}

// phaseRuns counts the runs of the example's drain hook in the log.
func phaseRuns(entries []map[string]any) int {
	n := 0
	for _, e := range entries {
		if e["phase"] == "deregister" && strings.HasPrefix(e["msg"].(string), "drain hook") {
			n++
		}
	}
	return n
}

func getText(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// manifestPreStop returns the manifest's preStop hook as a call to a probe
// listener's base URL (its path, its headers, the kubelet's user agent), and the
// token the manifest gives the container.
func manifestPreStop(t *testing.T) (func(base string) (int, string), string) {
	t.Helper()
	c := manifestContainer(t)
	token := ""
	for _, e := range c.Env {
		if e.Name == "SW_PRESTOP_TOKEN" {
			token = e.Value
		}
	}
	get := c.Lifecycle.PreStop.HTTPGet
	if get.Path == "" || token == "" {
		t.Fatalf("the manifest has no preStop httpGet (%+v) or no %s", get, "SW_PRESTOP_TOKEN")
	}
	return func(base string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+get.Path, nil)
		for _, h := range get.Headers {
			req.Header.Set(h.Name, h.Value)
		}
		req.Header.Set("User-Agent", "kube-lifecycle/test")
		return do(t, req)
	}, token
}

// do sends req without following redirects and returns the answer's code and body.
func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestPreStopStrangers: a client on the probe port without the token — a GET or POST
// of /prestop, its encoded, doubled-slash, trailing-slash and query spellings, a
// wrong token — withdraws neither readiness nor gRPC health, and is counted and
// logged with its address; with no token configured even the manifest's hook is
// refused, and SIGTERM still drains and exits 0.
func TestPreStopStrangers(t *testing.T) {
	hook, token := manifestPreStop(t)
	for _, configured := range []bool{true, false} {
		t.Run(fmt.Sprintf("token configured: %v", configured), func(t *testing.T) {
			grpcAddr := freeAddr(t)
			env := []string{"GRPC_ADDR=" + grpcAddr, "SW_DRAIN_DELAY=200ms"}
			if configured {
				env = append(env, "SW_PRESTOP_TOKEN="+token)
			}
			p, probe := startExample(t, env...)
			mustLog(t, p, map[string]string{"msg": "service ready"}, 20*time.Second)
			base := "http://" + probe
			hc := healthpb.NewHealthClient(dialGRPC(t, grpcAddr))
			grpcHealth := func() healthpb.HealthCheckResponse_ServingStatus {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "orders.v1.OrdersService"})
				if err != nil {
					t.Fatalf("gRPC health: %v", err)
				}
				return r.GetStatus()
			}
			// SERVING once the first run of the readiness checks is in.
			wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			watch, err := hc.Watch(wctx, &healthpb.HealthCheckRequest{Service: "orders.v1.OrdersService"})
			if err != nil {
				t.Fatal(err)
			}
			for {
				r, err := watch.Recv()
				if err != nil {
					t.Fatalf("gRPC health: %v, want SERVING", err)
				}
				if r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
					break
				}
			}

			refused := 0
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				for _, path := range []string{"/prestop", "/%70restop", "//prestop", "/prestop?x=1", "/prestop/", "/PRESTOP"} {
					for _, sent := range []string{"", "wrong-" + token} {
						req, _ := http.NewRequest(method, base+path, nil)
						if sent != "" {
							req.Header.Set(prestop.Header, sent)
						}
						req.Header.Set("User-Agent", "stranger/1")
						code, body := do(t, req)
						want := 404 // another spelling: the listener serves one
						if path == "/prestop" || path == "/prestop?x=1" {
							want = 403
							refused++
						}
						if code != want {
							t.Errorf("%s %s (token %q) = %d %s, want %d", method, path, sent, code, body, want)
						}
					}
				}
			}
			if !configured {
				if code, body := hook(base); code != 403 {
					t.Errorf("the manifest's hook with no token configured = %d %s, want 403", code, body)
				}
				refused++
			}
			if code, body := getText(t, base+"/readyz"); code != 200 {
				t.Errorf("/readyz after the strangers = %d %s, want 200", code, body)
			}
			if s := grpcHealth(); s != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("gRPC health after the strangers = %s, want SERVING", s)
			}
			if phaseRuns(p.Entries()) != 0 {
				t.Error("a stranger ran the drain hook")
			}
			_, metrics := getText(t, base+"/metrics")
			reason := "no_credential"
			if !configured {
				reason = "not_configured"
			}
			if sum := refusedTotal(metrics); sum != refused {
				t.Errorf("servicewright_prestop_refused_total sums to %d, want %d\n%s", sum, refused, metrics)
			}
			if !strings.Contains(metrics, `servicewright_prestop_refused_total{reason="`+reason+`"}`) {
				t.Errorf("no refusal counted as %s", reason)
			}
			line := p.Find(map[string]string{"msg": "prestop: refused; readiness unchanged"})
			if line == nil || line["user_agent"] != "stranger/1" || !strings.HasPrefix(fmt.Sprint(line["remote_addr"]), "127.0.0.1:") {
				t.Errorf("refusal logged as %v, want its caller", line)
			}
			if n := countLog(p.Entries(), "prestop: refused; readiness unchanged"); n != 1 {
				t.Errorf("%d refusal lines for %d refusals, want 1 (one every 10s)", n, refused)
			}
			if strings.Contains(strings.Join(p.Lines(), "\n"), token) {
				t.Error("the token appears in the log")
			}

			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(t, p); code != 0 {
				t.Fatalf("exit %d, want 0", code)
			}
			if phaseRuns(p.Entries()) != 1 {
				t.Errorf("the drain hook ran %d times at SIGTERM, want once", phaseRuns(p.Entries()))
			}
		})
	}
}

// refusedTotal sums servicewright_prestop_refused_total over its reasons.
func refusedTotal(metrics string) int {
	sum := 0
	for _, l := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(l, "servicewright_prestop_refused_total{") {
			continue
		}
		var n int
		if _, err := fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &n); err == nil {
			sum += n
		}
	}
	return sum
}

// countLog counts the log lines whose message is msg.
func countLog(entries []map[string]any, msg string) int {
	n := 0
	for _, e := range entries {
		if e["msg"] == msg {
			n++
		}
	}
	return n
}

// container is the part of the manifest's container that manifestPreStop reads
// (cmd/example's TestKubernetesManifest checks the rest of it).
type container struct {
	Env []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	Lifecycle struct {
		PreStop struct {
			HTTPGet struct {
				Path    string `yaml:"path"`
				Headers []struct {
					Name  string `yaml:"name"`
					Value string `yaml:"value"`
				} `yaml:"httpHeaders"`
			} `yaml:"httpGet"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
}

// manifestContainer reads the first container of the Deployment in
// testdata/k8s/orders.yaml.
func manifestContainer(t *testing.T) container {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/k8s/orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var m struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []container `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			t.Fatal("no Deployment in the manifest")
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Kind == "Deployment" && len(m.Spec.Template.Spec.Containers) > 0 {
			return m.Spec.Template.Spec.Containers[0]
		}
	}
}
