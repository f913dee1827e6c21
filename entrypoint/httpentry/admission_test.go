package httpentry

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/fault"
)

// At the limit, an ordinary request is shed with a complete 503 and Retry-After on a
// connection kept open, before its handler runs; a critical route and a stream are
// admitted, and draining keeps its own answer.
func TestAdmissionShedsOverload(t *testing.T) {
	h := newHold()
	x := run(t, Config{}, h,
		WithAdmission(admission.Config{MinLimit: 1, MaxLimit: 1}),
		WithCritical("GET /pay/{id}"))
	held := make(chan int, 1)
	go func() {
		code, _, _ := x.get("/hold")
		held <- code
	}()
	recv(t, h.entered, "the first request's handler")

	c := dialRaw(t, x.s.Addr())
	resp, body := c.do("GET", "/ok", "")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, `"overloaded"`) {
		t.Fatalf("request beyond the limit = %d Retry-After %q %q; want 503, Retry-After 1, code overloaded",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp.Close {
		t.Error("a shed request closed its connection; overload keeps it open")
	}
	if resp, body := c.do("GET", "/pay/7", ""); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("critical route at the limit = %d %q, want 200 ok", resp.StatusCode, body)
	}
	if resp, _ := c.do("GET", "/events", "", "Accept: text/event-stream\r\n"); resp.StatusCode != 200 {
		t.Errorf("stream at the limit = %d, want 200: streams are exempt", resp.StatusCode)
	}
	if n := x.s.ShedOverload(); n != 1 {
		t.Errorf("ShedOverload = %d, want 1", n)
	}
	close(h.release)
	if code := recv(t, held, "the first request"); code != 200 {
		t.Errorf("the admitted request = %d, want 200", code)
	}
	if resp, _ := c.do("GET", "/ok", ""); resp.StatusCode != 200 {
		t.Errorf("request once the limit has room = %d, want 200", resp.StatusCode)
	}
}

func TestAdmissionConfig(t *testing.T) {
	t.Run("bounds and patterns are checked by New", func(t *testing.T) {
		_, err := New(Config{}, http.NotFoundHandler(),
			WithAdmission(admission.Config{MinLimit: 10, MaxLimit: 5}), WithCritical("GET /a", "GET /a"))
		var ce *fault.ConfigError
		if !errors.As(err, &ce) || len(ce.Problems) != 2 || ce.Problems[0].Field != "Admission.MinLimit" ||
			ce.Problems[0].Variable != "SW_ADMISSION_MIN_LIMIT" || ce.Problems[1].Field != "WithCritical" {
			t.Fatalf("New = %v, want Admission.MinLimit naming %s, and a WithCritical duplicate", err, "SW_ADMISSION_MIN_LIMIT")
		}
	})
	t.Run("a malformed variable names its field", func(t *testing.T) {
		t.Setenv("SW_ADMISSION_WINDOW", "-")
		_, err := New(Config{}, http.NotFoundHandler())
		var ce *fault.ConfigError
		if !errors.As(err, &ce) || ce.Problems[0].Field != "Admission.Window" || !strings.Contains(err.Error(), "SW_ADMISSION_WINDOW") {
			t.Fatalf("New = %v, want Admission.Window naming %s", err, "SW_ADMISSION_WINDOW")
		}
	})
	t.Run("Off is one field", func(t *testing.T) {
		s, err := New(Config{}, http.NotFoundHandler(), WithAdmission(admission.Config{Off: true}))
		if err != nil || s.AdmissionLimit() != 0 || s.gate.Limiter() != nil {
			t.Fatalf("New(Off) = %v, limit %d; want no limiter", err, s.AdmissionLimit())
		}
		s, err = New(Config{}, http.NotFoundHandler())
		if err != nil || s.AdmissionLimit() != 20 {
			t.Fatalf("New() = %v, limit %d; want admission on by default at %d", err, s.AdmissionLimit(), 20)
		}
	})
}
