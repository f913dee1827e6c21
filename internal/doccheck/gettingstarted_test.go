package doccheck

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/host"
)

// TestGettingStartedGracePeriod holds the Deployment of docs/getting-started.md to the
// true worst case of the service on that page: the worst case the Host computes for
// its spec under the manifest's SW_DRAIN_DELAY is the figure the page quotes, and it
// fits the manifest's terminationGracePeriodSeconds with the Host's 10 % headroom,
// which the manifest also passes as TERMINATION_GRACE_PERIOD.
func TestGettingStartedGracePeriod(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	find := func(re string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(doc)
		if m == nil {
			t.Fatalf("docs/getting-started.md has no %s", re)
		}
		return m[1]
	}
	grace, err := strconv.Atoi(find(`terminationGracePeriodSeconds: (\d+)`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SW_DRAIN_DELAY":           find(`\{name: SW_DRAIN_DELAY, value: "([^"]+)"\}`),
		"TERMINATION_GRACE_PERIOD": find(`\{name: TERMINATION_GRACE_PERIOD, value: "([^"]+)"\}`),
	}
	if env["TERMINATION_GRACE_PERIOD"] != strconv.Itoa(grace) {
		t.Errorf("TERMINATION_GRACE_PERIOD %s, terminationGracePeriodSeconds %d: pass the same figure", env["TERMINATION_GRACE_PERIOD"], grace)
	}

	// The page's service (step 2; internal/doccheck/snippets/hellohttp is the same code).
	api, err := httpentry.New(httpentry.Config{Addr: ":8080"}, http.NewServeMux())
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.AppSpec{
		ServiceName: "hello",
		Entrypoints: []host.Registration{{Entrypoint: api}},
		Budgets:     host.Budgets{DrainDelay: 5 * time.Second},
		Telemetry:   host.TelemetryConfig{Logger: zap.NewNop()},
	}, host.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	wc := h.WorstCase()
	if !wc.Fits(time.Duration(grace) * time.Second) {
		t.Errorf("worst case %s does not fit terminationGracePeriodSeconds %d with 10%% headroom", wc, grace)
	}
	quoted := strconv.FormatFloat(wc.Total.Seconds(), 'f', -1, 64)
	for _, want := range []string{`"worst_case_seconds":` + quoted, quoted + " s"} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/getting-started.md does not quote the worst case as %s (the Host computes %s)", want, wc)
		}
	}
	for _, f := range wc.Figures {
		if want := fmt.Sprintf("`%s` %s s", f.Name, strconv.FormatFloat(f.Value.Seconds(), 'f', -1, 64)); !strings.Contains(strings.Join(strings.Fields(doc), " "), want) {
			t.Errorf("docs/getting-started.md does not give the figure %s", want)
		}
	}
}
