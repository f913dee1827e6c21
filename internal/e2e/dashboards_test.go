package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/servicewright/servicewright/internal/proctest"
)

// exposition is what /metrics exports: each sample name with its label names.
type exposition map[string]map[string]bool

// parseExposition reads the Prometheus text format: one sample a line, name, labels
// in braces, value.
func parseExposition(r io.Reader, into exposition) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		labels := ""
		if i := strings.IndexByte(line, '{'); i >= 0 && i < len(name)+1 {
			name = line[:i]
			rest := line[i+1:]
			end := closingBrace(rest)
			if end < 0 {
				return fmt.Errorf("unterminated labels: %q", line)
			}
			labels = rest[:end]
		}
		if into[name] == nil {
			into[name] = map[string]bool{}
		}
		for _, m := range labelMatchers(labels) {
			into[name][m] = true
		}
	}
	return sc.Err()
}

// closingBrace is the index of the '}' that ends a label set, quoted values skipped.
func closingBrace(s string) int {
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch {
		case inQuote && s[i] == '\\':
			i++
		case s[i] == '"':
			inQuote = !inQuote
		case !inQuote && s[i] == '}':
			return i
		}
	}
	return -1
}

var (
	metricName = regexp.MustCompile(`\bservicewright_[a-zA-Z0-9_]+`)
	selector   = regexp.MustCompile(`\b(servicewright_[a-zA-Z0-9_]+)\s*\{`)
	labelName  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"`)
	grouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	labelVals  = regexp.MustCompile(`label_values\(\s*(servicewright_[a-zA-Z0-9_]+)[^,]*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
)

// labelMatchers returns the label names of a label set or selector body.
func labelMatchers(body string) []string {
	var out []string
	for _, m := range labelName.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// targetLabels are attached by Prometheus when it scrapes, not exported; a scraped
// label of the same name is stored as exported_<name>.
var targetLabels = map[string]bool{"job": true, "instance": true}

// stored is the name Prometheus stores a scraped label under, back to the exported
// name: exported_job is the service's own "job".
func exported(label string) (string, bool) {
	name, ok := strings.CutPrefix(label, "exported_")
	return name, ok && targetLabels[name]
}

// check returns what expr queries that exp does not export.
func (exp exposition) check(expr string) []string {
	var missing []string
	has := func(metric, label string) bool {
		if name, ok := exported(label); ok {
			return exp[metric][name]
		}
		return targetLabels[label] || exp[metric][label]
	}
	names := metricName.FindAllString(expr, -1)
	for _, n := range names {
		if exp[n] == nil {
			missing = append(missing, "metric "+n)
		}
	}
	for _, m := range selector.FindAllStringSubmatchIndex(expr, -1) {
		metric := expr[m[2]:m[3]]
		body := expr[m[1]:]
		body = body[:max(closingBrace(body), 0)]
		for _, l := range labelMatchers(body) {
			if exp[metric] != nil && !has(metric, l) {
				missing = append(missing, fmt.Sprintf("label %s of %s", l, metric))
			}
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			l = strings.TrimSpace(l)
			found := l == ""
			for _, n := range names {
				found = found || has(n, l)
			}
			if !found {
				missing = append(missing, fmt.Sprintf("label %s (grouping) of %v", l, names))
			}
		}
	}
	for _, lv := range labelVals.FindAllStringSubmatch(expr, -1) {
		if !has(lv[1], lv[2]) {
			missing = append(missing, fmt.Sprintf("label %s of %s", lv[2], lv[1]))
		}
	}
	return missing
}

// dashboardQueries returns every query of a Grafana dashboard: the "expr" of each
// target and the query of each template variable, wherever they nest.
func dashboardQueries(t *testing.T, path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && (k == "expr" || k == "query" || k == "definition") && strings.Contains(s, "servicewright_") {
					out = append(out, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
	return out
}

// alertQueries returns the expr of every rule of a Prometheus rules file.
func alertQueries(t *testing.T, path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Record, Expr string
				For                 string
				Labels, Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Expr == "" || (r.Alert == "" && r.Record == "") {
				t.Errorf("%s: group %s has a rule without a name or an expr", path, g.Name)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: %s: for %q is not a duration", path, r.Alert, r.For)
				}
			}
			out = append(out, r.Expr)
		}
	}
	return out
}

func scrape(t *testing.T, probe string, into exposition) {
	t.Helper()
	resp, err := http.Get("http://" + probe + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := parseExposition(resp.Body, into); err != nil {
		t.Fatal(err)
	}
}

// TestDashboards: every metric and label that the Grafana dashboard and the
// Prometheus alerts query is exported by the example's /metrics, scraped once while
// it serves (after an order went through HTTP and Kafka and the cron job ran) and
// once during its exit (after the leadership term ended).
func TestDashboards(t *testing.T) {
	probe, httpAddr := freeAddr(t), freeAddr(t)
	p := proctest.Start(t, bin, "PROBE_ADDR="+probe, "HTTP_ADDR="+httpAddr, "SW_LOG_LEVEL=debug",
		"EXAMPLE_CRON_EVERY=1s", "EXAMPLE_HOOK_DELAY=3s")
	mustLog(t, p, map[string]string{"msg": "leadership: term started"}, 20*time.Second)
	resp, err := http.Post("http://"+httpAddr+"/orders", "application/json", strings.NewReader(`{"id":"dash-1","item":"tea","qty":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	var exp exposition
	deadline := time.Now().Add(15 * time.Second)
	for {
		exp = exposition{}
		scrape(t, probe, exp)
		if exp["servicewright_kafka_committed_offset"] != nil && exp["servicewright_cron_run_duration_seconds_count"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the order was not consumed or the cron job did not run within 15s")
		}
		time.Sleep(100 * time.Millisecond) // polling the scrape, bounded by the deadline
	}
	_ = p.Signal(syscall.SIGTERM)
	mustLog(t, p, stage("pre_shutdown"), 20*time.Second)
	scrape(t, probe, exp)
	exitCode(t, p)

	// A label named like a Prometheus target label is renamed exported_<name> when
	// scraped: dashboards would have to know that, so none is exported.
	for name, labels := range exp {
		for l := range targetLabels {
			if labels[l] {
				t.Errorf("%s exports a %q label, which Prometheus stores as exported_%s", name, l, l)
			}
		}
	}

	files := map[string][]string{
		"../../deploy/grafana/servicewright.json": dashboardQueries(t, "../../deploy/grafana/servicewright.json"),
		"../../deploy/prometheus/alerts.yaml":     alertQueries(t, "../../deploy/prometheus/alerts.yaml"),
	}
	for file, queries := range files {
		if len(queries) < 10 {
			t.Errorf("%s: only %d queries found", file, len(queries))
		}
		for _, q := range queries {
			for _, m := range exp.check(q) {
				t.Errorf("%s queries %s, which /metrics does not export: %s", file, m, q)
			}
		}
	}
}

func TestExpositionCheck(t *testing.T) {
	exp := exposition{}
	in := `# HELP x
servicewright_a_total{entrypoint="e",job="j"} 1
servicewright_b_bucket{le="0.1"} 2
servicewright_c 1
`
	if err := parseExposition(strings.NewReader(in), exp); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{
		`sum by (entrypoint) (rate(servicewright_a_total{job=~"$job"}[5m]))`:              0,
		`sum by (exported_job) (servicewright_a_total)`:                                   0,
		`histogram_quantile(0.9, sum by (le) (rate(servicewright_b_bucket[5m])))`:         0,
		`servicewright_renamed_total`:                                                     1,
		`servicewright_c{entrypoint="x"}`:                                                 1,
		`sum by (reason) (servicewright_a_total)`:                                         1,
		`label_values(servicewright_c, key)`:                                              1,
		`servicewright_c == 0 and on (job, instance) servicewright_a_total{outcome="ok"}`: 1,
	} {
		if got := exp.check(q); len(got) != want {
			t.Errorf("check(%s) = %v, want %d problems", q, got, want)
		}
	}
}
