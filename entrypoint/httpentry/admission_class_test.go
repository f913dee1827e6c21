package httpentry

import (
	"errors"
	"net/http"
	"testing"

	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/fault"
)

// A route class has a limit of its own: a slow route at its limit sheds its own
// next request, and the other routes, at the Server's limit, are still admitted.
// With one limit for every route (WithRouteClass left out), the same read is shed.
func TestAdmissionRouteClass(t *testing.T) {
	for _, classed := range []bool{true, false} {
		name := map[bool]string{true: "a slow route class at its limit leaves the others theirs", false: "one limit for every route sheds the read"}[classed]
		t.Run(name, func(t *testing.T) {
			h := newHold()
			opts := []Option{WithAdmission(admission.Config{MinLimit: 1, MaxLimit: 1})}
			if classed {
				opts = append(opts, WithRouteClass("GET /hold"))
			}
			x := run(t, Config{}, h, opts...)
			held := make(chan int, 1)
			go func() {
				code, _, _ := x.get("/hold")
				held <- code
			}()
			recv(t, h.entered, "the slow route's handler")

			c := dialRaw(t, x.s.Addr())
			resp, body := c.do("GET", "/ok", "")
			switch {
			case !classed && resp.StatusCode != http.StatusServiceUnavailable:
				t.Fatalf("a read beside a slow request under one limit of 1 = %d %q, want 503", resp.StatusCode, body)
			case classed && (resp.StatusCode != 200 || body != "ok"):
				t.Fatalf("a read beside a slow route class at its limit = %d %q, want 200 ok: the classes must not shed each other", resp.StatusCode, body)
			}
			if classed {
				if resp, _ := c.do("GET", "/hold", ""); resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("the slow route's second request at its class's limit of 1 = %d, want 503", resp.StatusCode)
				}
				if n := x.s.ShedOverload(); n != 1 {
					t.Errorf("ShedOverload = %d, want the class's 1 counted with the Server's", n)
				}
			}
			close(h.release)
			if code := recv(t, held, "the slow request"); code != 200 {
				t.Errorf("the slow request = %d, want 200", code)
			}
		})
	}
	t.Run("a route in two classes is refused", func(t *testing.T) {
		_, err := New(Config{}, http.NotFoundHandler(), WithCritical("POST /orders"), WithRouteClass("POST /orders"))
		var ce *fault.ConfigError
		if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != "WithRouteClass" {
			t.Fatalf("New = %v, want one WithRouteClass problem", err)
		}
	})
}

// The knobs that once switched the protection off are refused by New, in one
// ConfigError naming each field and its variable.
func TestAdmissionKnobBounds(t *testing.T) {
	t.Setenv("SW_ADMISSION_WINDOW", "10us")
	t.Setenv("SW_ADMISSION_MAX_QUEUE_DELAY", "1ns")
	_, err := New(Config{}, http.NotFoundHandler())
	var ce *fault.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 2 ||
		ce.Problems[0].Field != "Admission.Window" || ce.Problems[0].Variable != "SW_ADMISSION_WINDOW" ||
		ce.Problems[1].Field != "Admission.MaxQueueDelay" || ce.Problems[1].Variable != "SW_ADMISSION_MAX_QUEUE_DELAY" {
		t.Fatalf("New = %v, want Admission.Window (%s) and Admission.MaxQueueDelay (%s)", err, "SW_ADMISSION_WINDOW", "SW_ADMISSION_MAX_QUEUE_DELAY")
	}
}
