package main

import (
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPreStopEndpoint: GET /prestop on the probe port drains ahead of the stop —
// readiness answers 503 draining, the drain delay passes, the drain phases run once —
// while the service keeps serving; SIGTERM then exits 0 without waiting the delay or
// running the phases again.
func TestPreStopEndpoint(t *testing.T) {
	const delay = 400 * time.Millisecond
	httpAddr := freeAddr(t)
	p, probe := startExample(t, "HTTP_ADDR="+httpAddr, "SW_DRAIN_DELAY="+delay.String())
	mustLog(t, p, map[string]string{"msg": "service ready"}, 20*time.Second)
	base := "http://" + probe

	began := time.Now()
	code, body := getText(t, base+"/prestop")
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
		t.Errorf("drain phase ran %d times by the end of /prestop, want 1", phaseRuns(p.Entries()))
	}
	if code, _ := getText(t, "http://"+httpAddr+"/hello"); code != 200 {
		t.Errorf("GET /hello after /prestop = %d: the service must serve until the stop", code)
	}
	again := time.Now()
	if code, _ := getText(t, base+"/prestop"); code != 200 || time.Since(again) > delay/2 {
		t.Errorf("a second /prestop = %d after %s, want 200 at once", code, time.Since(again))
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
		t.Errorf("drain phase ran %d times in all, want once", n)
	}
	if p.Find(map[string]string{"msg": "readiness withdrawn; waiting the drain delay with every entrypoint accepting"}) != nil {
		t.Error("the shutdown waited the drain delay again after /prestop had")
	}
	rep := p.Find(map[string]string{"msg": "shutdown report"})
	if rep == nil || rep["result"] != "success" {
		t.Fatalf("shutdown report %v, want success", rep)
	}
	if d, err := time.ParseDuration(rep["drain_delay"].(string)); err != nil || d >= delay/2 {
		t.Errorf("the shutdown's drain_delay = %v (%v), want next to nothing after /prestop", rep["drain_delay"], err)
	}
}

// phaseRuns counts the runs of the example's drain phase in the log.
func phaseRuns(entries []map[string]any) int {
	n := 0
	for _, e := range entries {
		if e["phase"] == "deregister" && strings.HasPrefix(e["msg"].(string), "drain phase") {
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
