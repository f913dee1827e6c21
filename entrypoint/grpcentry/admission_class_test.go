package grpcentry_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/fault"
)

// A route class has a limit of its own: a slow method at its limit sheds its own
// next call, and the other methods, at the Server's limit, are still served. With
// one limit for every method, the same cheap call is shed.
func TestAdmissionRouteClass(t *testing.T) {
	const slow = "/grpc.testing.TestService/UnaryCall"
	for _, classed := range []bool{true, false} {
		name := map[bool]string{true: "a slow method class at its limit leaves the others theirs", false: "one limit for every method sheds the cheap call"}[classed]
		t.Run(name, func(t *testing.T) {
			entered, release := make(chan struct{}, 1), make(chan struct{})
			svc := &service{unary: func(ctx context.Context) error {
				entered <- struct{}{}
				<-release
				return nil
			}}
			opts := []grpcentry.Option{grpcentry.WithAdmission(admission.Config{MinLimit: 1, MaxLimit: 1})}
			if classed {
				opts = append(opts, grpcentry.WithRouteClass(slow))
			}
			x := run(t, grpcentry.Config{}, svc, opts...)
			held := make(chan error, 1)
			go func() {
				_, err := x.client.UnaryCall(ctxT(t), &testpb.SimpleRequest{})
				held <- err
			}()
			waitFor(t, entered, "the slow call's handler")

			_, err := x.client.EmptyCall(ctxT(t), &testpb.Empty{})
			switch {
			case !classed && status.Code(err) != codes.ResourceExhausted:
				t.Fatalf("a cheap call beside a slow one under one limit of 1: %v, want RESOURCE_EXHAUSTED", err)
			case classed && err != nil:
				t.Fatalf("a cheap call beside a slow method class at its limit: %v, want served: the classes must not shed each other", err)
			}
			if classed {
				if _, err := x.client.UnaryCall(ctxT(t), &testpb.SimpleRequest{}); status.Code(err) != codes.ResourceExhausted {
					t.Errorf("the slow method's second call at its class's limit of 1: %v, want RESOURCE_EXHAUSTED", err)
				}
				if n := x.s.ShedOverload(); n != 1 {
					t.Errorf("ShedOverload = %d, want the class's 1 counted with the Server's", n)
				}
			}
			close(release)
			if err := waitFor(t, held, "the slow call"); err != nil {
				t.Errorf("the slow call = %v", err)
			}
		})
	}
	t.Run("a method in two classes is refused", func(t *testing.T) {
		_, err := grpcentry.New(grpcentry.Config{}, func(*grpc.Server) {},
			grpcentry.WithCritical(slow), grpcentry.WithRouteClass(slow))
		var ce *fault.ConfigError
		if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != "WithRouteClass" {
			t.Fatalf("New = %v, want one WithRouteClass problem", err)
		}
	})
}
