package e2e

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/servicewright/servicewright/internal/proctest"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it decodes each export
// request with the OTLP protobuf types and keeps the spans with their resource.
type otlpReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	spans    []*tracepb.Span
	resource map[string]string // attributes of the last resource seen
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{resource: map[string]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.export))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) export(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var msg collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if req.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			r.resource[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *otlpReceiver) got() ([]*tracepb.Span, map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := make(map[string]string, len(r.resource))
	for k, v := range r.resource {
		res[k] = v
	}
	return slices.Clone(r.spans), res
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			if v := kv.GetValue().GetStringValue(); v != "" {
				return v
			}
			return fmt.Sprint(kv.GetValue().GetIntValue())
		}
	}
	return ""
}

// TestOTLP: with only the standard endpoint and service name set, one POST /orders
// is one trace from the HTTP server span through the Kafka producer to the consumer
// span, the lifecycle's spans arrive too, and all of it reached a real OTLP/HTTP
// receiver by the time the process exits after SIGTERM.
func TestOTLP(t *testing.T) {
	recv := newOTLPReceiver(t)
	probe, httpAddr := freeAddr(t), freeAddr(t)
	p := proctest.Start(t, bin, "PROBE_ADDR="+probe, "HTTP_ADDR="+httpAddr, "SW_LOG_LEVEL=debug",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.srv.URL, "OTEL_SERVICE_NAME=orders-under-test")
	mustLog(t, p, stage("serve"), 20*time.Second)
	resp, err := http.Post("http://"+httpAddr+"/orders", "application/json",
		strings.NewReader(`{"id":"otlp-1","item":"tea","qty":2}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST /orders: %s", resp.Status)
	}
	waitStored(t, httpAddr, "otlp-1")
	_ = p.Signal(syscall.SIGTERM)
	if code := exitCode(t, p); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}

	spans, res := recv.got()
	if res["service.name"] != "orders-under-test" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's", res["service.name"])
	}
	if res["service.instance.id"] == "" {
		t.Errorf("no service.instance.id in the resource %v", res)
	}
	var names []string
	var server *tracepb.Span
	for _, s := range spans {
		names = append(names, s.GetName())
		if s.GetKind() == tracepb.Span_SPAN_KIND_SERVER && attr(s, "http.request.method") == "POST" &&
			strings.Contains(s.GetName()+attr(s, "url.path")+attr(s, "http.route"), "/orders") {
			server = s
		}
	}
	if server == nil {
		t.Errorf("no HTTP server span for POST /orders among %v", names)
	} else {
		if code := attr(server, "http.response.status_code"); !strings.HasPrefix(code, "2") {
			t.Errorf("server span status code %q", code)
		}
		// The order travels through Kafka in the same trace: produced under the
		// request, handled in a consumer span that continues it.
		kinds := map[tracepb.Span_SpanKind]bool{}
		for _, s := range spans {
			if bytes.Equal(s.GetTraceId(), server.GetTraceId()) {
				kinds[s.GetKind()] = true
			}
		}
		if !kinds[tracepb.Span_SPAN_KIND_PRODUCER] || !kinds[tracepb.Span_SPAN_KIND_CONSUMER] {
			t.Errorf("the trace of POST /orders holds span kinds %v; want the producer and the consumer span too", kinds)
		}
	}
	// The startup is one trace and the exit another, each unit under its stage.
	traceOf := map[string]string{}
	for _, s := range spans {
		traceOf[s.GetName()] = hex.EncodeToString(s.GetTraceId())
	}
	for root, members := range map[string][]string{
		"servicewright.startup":  {"servicewright.warmup", `warmup "prime-cache"`, `post_start hook "print-hints"`},
		"servicewright.shutdown": {"servicewright.drain", `entrypoint "http" Drain`, `pre_shutdown hook "final-report"`, "servicewright.close_scope"},
	} {
		for _, m := range append(members, root) {
			switch {
			case traceOf[m] == "":
				t.Errorf("no span %q among %v", m, names)
			case traceOf[m] != traceOf[root]:
				t.Errorf("span %q is not in the trace of %s", m, root)
			}
		}
	}
	if !slices.Contains(names, "servicewright.serve") {
		t.Errorf("no span servicewright.serve among %v", names)
	}
}

// waitStored polls GET /orders/{id} until the consumer has stored the order, at most
// 10 s: the order's trace is complete once it is stored.
func waitStored(t *testing.T, httpAddr, id string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		resp, err := http.Get("http://" + httpAddr + "/orders/" + id)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("order %s not stored within 10s", id)
		}
	}
}
