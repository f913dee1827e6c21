package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestHTTPDrain(t *testing.T) {
	t.Run("a request in flight at SIGTERM completes with 200", func(t *testing.T) {
		httpAddr := freeAddr(t)
		p, probe := startExample(t, "HTTP_ADDR="+httpAddr)
		mustLog(t, p, stage("serve"), 20*time.Second)
		type result struct {
			code int
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := http.Get("http://" + httpAddr + "/slow?d=700ms")
			if err != nil {
				done <- result{0, err}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			done <- result{resp.StatusCode, nil}
		}()
		// The request is in flight once the HTTP entrypoint counts it.
		for deadline := time.Now().Add(5 * time.Second); ; {
			if strings.Contains(mustGet(t, "http://"+probe+"/debug/lifecycle").raw, `"name":"http","state":"serving","in_flight":1`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the slow request never became in flight")
			}
		}
		_ = p.Signal(syscall.SIGTERM)
		r := <-done
		if r.err != nil || r.code != 200 {
			t.Fatalf("in-flight request: %d %v", r.code, r.err)
		}
		if code := exitCode(t, p); code != 0 {
			t.Fatalf("exit %d", code)
		}
	})

	t.Run("a request that outlives the grace is cut at Stop and the report says so", func(t *testing.T) {
		httpAddr := freeAddr(t)
		p, probe := startExample(t, "HTTP_ADDR="+httpAddr, "SW_DRAIN_GRACE=1500ms", "EXAMPLE_LEADER_TTL=1500ms")
		mustLog(t, p, stage("serve"), 20*time.Second)
		done := make(chan error, 1)
		go func() {
			resp, err := http.Get("http://" + httpAddr + "/slow?d=30s")
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil {
					err = fmt.Errorf("completed with %d", resp.StatusCode)
				}
			}
			done <- err
		}()
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(mustGet(t, "http://"+probe+"/debug/lifecycle").raw, `{"name":"http","state":"serving","in_flight":1`); {
			if time.Now().After(deadline) {
				t.Fatal("the slow request never became in flight")
			}
		}
		_ = p.Signal(syscall.SIGTERM)
		if err := <-done; err == nil || strings.HasPrefix(err.Error(), "completed") {
			t.Errorf("the 30s request was not cut: %v", err)
		}
		if code := exitCode(t, p); code != 1 {
			t.Errorf("exit %d, want 1 (the drain overran its grace)", code)
		}
		rep := p.Find(map[string]string{"msg": "shutdown report"})
		if rep == nil || !strings.Contains(fmt.Sprint(rep["overran"]), "http") || !strings.Contains(fmt.Sprint(rep["drains"]), "left:1") {
			t.Errorf("shutdown report does not say the http drain was cut: %v", rep)
		}
	})
}
