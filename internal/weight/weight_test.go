package weight

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const module = "github.com/servicewright/servicewright"

// Forbidden modules and packages, by what they are.
var (
	grpc      = []string{"google.golang.org/grpc"}
	container = []string{"go.uber.org/fx", "go.uber.org/dig"}
	exporters = []string{"go.opentelemetry.io/otel/exporters/otlp", "go.opentelemetry.io/contrib/exporters",
		"go.opentelemetry.io/otel/exporters/stdout"}
	kafkaFake    = []string{"github.com/twmb/franz-go"}
	errorTracker = []string{"github.com/getsentry/sentry-go"}
	redisDriver  = []string{"github.com/redis/go-redis"}
	pgDriver     = []string{"github.com/jackc/pgx"}
	kafkaDriver  = []string{"github.com/segmentio/kafka-go"}
	hostPkg      = []string{module + "/host"}
	// devTools are the test and development tools: never imported by a production package.
	devTools = []string{module + "/kafkakit/kafkadev", module + "/host/hosttest", module + "/lock/locktest",
		module + "/internal/testenv", module + "/internal/proctest"}

	// etcdClient and kubeClient are linked by their lock packages only.
	etcdClient = []string{"go.etcd.io/etcd"}
	kubeClient = []string{"k8s.io/client-go", "k8s.io/api", "k8s.io/apimachinery"}
)

func join(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

// core is what no package of the core rows may link (docs/architecture.md, Weight:
// "no gRPC, no DI container, no exporter, no driver").
var core = join(grpc, container, exporters, kafkaFake, errorTracker, redisDriver, pgDriver, kafkaDriver, etcdClient, kubeClient, devTools)

// rows is the weight table of docs/architecture.md: each package, and what it must not link.
var rows = []struct {
	pkgs   []string
	forbid []string
}{
	// health, host, httpentry, and the README's hello program built on them.
	{[]string{"health", "host", "entrypoint/httpentry", "entrypoint/conntrack", "internal/doccheck/snippets/hellohttp"}, core},
	// The leaves: zap at most (allowlisted in TestWeight too). entrypoint is held to
	// the core row only: its Defaults carry a Prometheus registerer and a tracer
	// provider, so it links their APIs (a known gap against the table).
	{[]string{"fault", "lock", "fleet", "hooks", "entrypoint"}, core},
	// fx wiring packages: + fx.
	{[]string{"host/hostfx", "entrypoint/httpentry/httpfx"}, join(grpc, exporters, kafkaFake, errorTracker, redisDriver, pgDriver, kafkaDriver, etcdClient, kubeClient, devTools)},
	{[]string{"rediskit/redisfx"}, join(grpc, exporters, kafkaFake, errorTracker, pgDriver, kafkaDriver, etcdClient, kubeClient, devTools)},
	{[]string{"pgkit/pgfx"}, join(grpc, exporters, kafkaFake, errorTracker, redisDriver, kafkaDriver, etcdClient, kubeClient, devTools)},
	// OTLP export: + the exporters and gRPC, nothing else.
	{[]string{"host/otlp"}, join(container, kafkaFake, errorTracker, redisDriver, pgDriver, kafkaDriver, devTools)},
	// The driver kits: their one driver; no host, no container.
	{[]string{"rediskit"}, join(hostPkg, grpc, container, exporters, kafkaFake, errorTracker, pgDriver, kafkaDriver, etcdClient, kubeClient, devTools)},
	{[]string{"pgkit"}, join(hostPkg, grpc, container, exporters, kafkaFake, errorTracker, redisDriver, kafkaDriver, etcdClient, kubeClient, devTools)},
	{[]string{"kafkakit"}, join(hostPkg, grpc, container, exporters, kafkaFake, errorTracker, redisDriver, pgDriver, devTools)},
	// The outbox links both drivers it joins (pgx, kafka-go) and nothing else of the kind.
	{[]string{"outbox"}, join(hostPkg, grpc, container, exporters, kafkaFake, errorTracker, redisDriver, etcdClient, kubeClient, devTools)},
	{[]string{"sentrykit"}, join(hostPkg, grpc, container, exporters, kafkaFake, redisDriver, pgDriver, kafkaDriver, devTools)},
	// The other production packages: whatever they need, never a dev tool.
	{[]string{"entrypoint/grpcentry", "entrypoint/kafkaentry", "entrypoint/cronentry", "leader"}, join(etcdClient, kubeClient, devTools)},
	{[]string{"etcdkit"}, join(hostPkg, container, exporters, kafkaFake, errorTracker, redisDriver, pgDriver, kafkaDriver, kubeClient, devTools)},
	{[]string{"etcdkit/etcdfx"}, join(exporters, kafkaFake, errorTracker, redisDriver, pgDriver, kafkaDriver, kubeClient, devTools)},
	{[]string{"kubekit"}, join(hostPkg, grpc, container, exporters, kafkaFake, errorTracker, redisDriver, pgDriver, kafkaDriver, etcdClient, devTools)},
	{[]string{"kubekit/kubefx"}, join(grpc, exporters, kafkaFake, errorTracker, redisDriver, pgDriver, kafkaDriver, etcdClient, devTools)},
}

// leaves may link nothing outside the standard library but zap.
var leaves = []string{"fault", "lock", "fleet", "hooks"}

// deps returns, for each package, the non-standard packages it links.
func deps(t *testing.T, pkgs []string) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go: %v", err)
	}
	args := []string{"list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}
	for _, p := range pkgs {
		args = append(args, module+"/"+p)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	got := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var nonStd []string
		for _, d := range f[1:] {
			// A standard package's path has no dot in its first element.
			if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") {
				nonStd = append(nonStd, d)
			}
		}
		got[strings.TrimPrefix(f[0], module+"/")] = nonStd
	}
	return got
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

func TestWeight(t *testing.T) {
	var all []string
	for _, r := range rows {
		all = append(all, r.pkgs...)
	}
	got := deps(t, all)
	for _, r := range rows {
		for _, p := range r.pkgs {
			linked, ok := got[p]
			if !ok {
				t.Errorf("%s: not listed by go list", p)
				continue
			}
			for _, f := range r.forbid {
				for _, d := range linked {
					if under(d, f) {
						t.Errorf("%s links %s (forbidden: %s)", p, d, f)
						break
					}
				}
			}
		}
	}
	for _, p := range leaves {
		for _, d := range got[p] {
			if !under(d, module) && !under(d, "go.uber.org/zap") && !under(d, "go.uber.org/multierr") {
				t.Errorf("%s links %s: the leaf packages may link zap at most", p, d)
			}
		}
	}
}

// TestProductionBuildLinksNoDevBroker: the example built the way docs/example.md gives
// for production (a plain go build, no tags) links neither the development broker nor
// the franz-go tree behind it; built with -tags devbroker (make run), it does. The
// environment's GOFLAGS (make sets -tags=devbroker) is replaced for each build.
func TestProductionBuildLinksNoDevBroker(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go: %v", err)
	}
	list := func(goflags string) string {
		cmd := exec.Command(goBin, "list", "-deps", module+"/cmd/example")
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "GOFLAGS="+goflags)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (GOFLAGS=%s): %v", goflags, err)
		}
		return string(out)
	}
	for _, dev := range []string{module + "/kafkakit/kafkadev", "github.com/twmb/franz-go/pkg/kfake"} {
		if strings.Contains(list("-buildvcs=false"), dev+"\n") {
			t.Errorf("the production build of cmd/example links %s", dev)
		}
		if !strings.Contains(list("-buildvcs=false -tags=devbroker"), dev+"\n") {
			t.Errorf("the devbroker build of cmd/example does not link %s: the test no longer tells the two apart", dev)
		}
	}
}

// TestNoUpwardEdges: the packages that wait on a call take the unwind constant from
// internal/wait, at the bottom of the graph, not from hooks (which would drag
// hooks → fleet into every entrypoint); entrypoint's Gate talks to its limiter
// through an interface, never importing its own child entrypoint/admission; and
// fleet links neither lock nor zap.
func TestNoUpwardEdges(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go: %v", err)
	}
	pkgs := []string{"internal/wait", "internal/transport", "entrypoint", "entrypoint/httpentry",
		"entrypoint/grpcentry", "entrypoint/kafkaentry", "entrypoint/cronentry"}
	args := []string{"list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`}
	for _, p := range pkgs {
		args = append(args, module+"/"+p)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if imp == module+"/hooks" {
				t.Errorf("%s imports hooks", strings.TrimPrefix(f[0], module+"/"))
			}
			if f[0] == module+"/entrypoint" && strings.HasPrefix(imp, module+"/entrypoint/") {
				t.Errorf("entrypoint imports its child %s", strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
	// fleet is a vocabulary: SingletonStep's runtime (the lock, zap) lives in leader.
	for _, d := range deps(t, []string{"fleet"})["fleet"] {
		if d == module+"/lock" || strings.HasPrefix(d, "go.uber.org/zap") {
			t.Errorf("fleet links %s", d)
		}
	}
}
