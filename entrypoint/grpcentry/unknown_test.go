package grpcentry_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
)

// Calls to methods the server does not register — of an unknown service, or
// unknown in a registered one — are answered UNIMPLEMENTED and counted under
// method="unknown", one series whatever names the clients send; a registered method
// keeps its own.
func TestUnknownMethodsCountedUnderOneLabel(t *testing.T) {
	reg := prometheus.NewRegistry()
	x := run(t, grpcentry.Config{}, &service{}, grpcentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
	ctx := ctxT(t)
	names := []string{"/nope.Svc/A", "/nope.Svc/B", "/other.Svc/A", "/grpc.testing.TestService/Nope"}
	for _, m := range names {
		err := x.conn.Invoke(ctx, m, &testpb.Empty{}, &testpb.Empty{})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("%s: %v, want UNIMPLEMENTED", m, err)
		}
	}
	if _, err := x.client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	got := testutil.ToFloat64(mustCounter(t, reg, "servicewright_grpc_requests_total",
		map[string]string{"method": "unknown", "code": "UNIMPLEMENTED"}))
	if got != float64(len(names)) {
		t.Errorf(`requests_total{method="unknown",code="UNIMPLEMENTED"} = %v, want %d`, got, len(names))
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "method" {
					methods[lp.GetValue()] = true
				}
			}
		}
	}
	for m := range methods {
		if m != "unknown" && m != "/grpc.testing.TestService/EmptyCall" {
			t.Errorf("a series labelled method=%q, want only unknown and the registered method called", m)
		}
		if strings.Contains(m, "ope") {
			t.Errorf("a client-sent name became a label: %q", m)
		}
	}
}
