package grpcentry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/grpcentry"
	"github.com/servicewright/servicewright/fault"
)

func register(g *grpc.Server) { testpb.RegisterTestServiceServer(g, &service{}) }

func fields(t *testing.T, err error) []string {
	t.Helper()
	ce, ok := errors.AsType[*fault.ConfigError](err)
	if !ok {
		t.Fatalf("err = %v, want *fault.ConfigError", err)
	}
	var out []string
	for _, p := range ce.Problems {
		out = append(out, p.Field)
	}
	return out
}

func TestNewRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  grpcentry.Config
		reg  func(*grpc.Server)
		opts []grpcentry.Option
		want []string
	}{
		{name: "negative window and sizes", reg: register, cfg: grpcentry.Config{
			StreamDrainWindow: -time.Second, MaxRecvMsgSize: -1, MaxSendMsgSize: -1, MaxConnectionAge: -1,
		}, want: []string{"MaxRecvMsgSize", "MaxSendMsgSize", "MaxConnectionAge", "StreamDrainWindow"}},
		{name: "missing TLS files", reg: register, cfg: grpcentry.Config{
			CertFile: filepath.Join(dir, "no-cert.pem"), KeyFile: filepath.Join(dir, "no-key.pem"),
		}, want: []string{"CertFile", "KeyFile"}},
		{name: "invalid TLS files", reg: register, cfg: grpcentry.Config{CertFile: garbage, KeyFile: garbage},
			want: []string{"CertFile, KeyFile"}},
		{name: "half of TLS", reg: register, cfg: grpcentry.Config{CertFile: garbage},
			want: []string{"CertFile, KeyFile"}},
		{name: "empty health service list", reg: register, opts: []grpcentry.Option{grpcentry.WithHealthServices()},
			want: []string{"WithHealthServices"}},
		{name: "unregistered health service", reg: register, opts: []grpcentry.Option{grpcentry.WithHealthServices("nope")},
			want: []string{"WithHealthServices"}},
		{name: "nil monitor and register", opts: []grpcentry.Option{grpcentry.WithHealth(nil)},
			want: []string{"register", "WithHealth"}},
		{name: "register panics", reg: func(*grpc.Server) { panic("no database") },
			want: []string{"register"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := grpcentry.New(c.cfg, c.reg, c.opts...)
			got := fields(t, err)
			for _, f := range c.want {
				if !slices.Contains(got, f) {
					t.Errorf("no problem for %s in %v", f, err)
				}
			}
		})
	}
}

func TestNewAcceptsZeroConfig(t *testing.T) {
	s, err := grpcentry.New(grpcentry.Config{}, register, grpcentry.WithHealthServices("grpc.testing.TestService"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "grpc" || s.Addr() != nil {
		t.Fatalf("Name %q Addr %v", s.Name(), s.Addr())
	}
}

// Methods called out of the Host's order are refused with entrypoint.ErrOutOfTurn.
func TestOutOfTurn(t *testing.T) {
	s, err := grpcentry.New(grpcentry.Config{Addr: "127.0.0.1:0"}, register)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(context.Background(), nil); !errors.Is(err, entrypoint.ErrOutOfTurn) {
		t.Errorf("Serve before Bind = %v, want ErrOutOfTurn", err)
	}
	if err := s.Bind(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Bind(context.Background()); !errors.Is(err, entrypoint.ErrOutOfTurn) {
		t.Errorf("second Bind = %v, want ErrOutOfTurn", err)
	}
	if err := s.Drain(context.Background()); err != nil {
		t.Errorf("Drain before Serve = %v", err)
	}
	if err := s.Serve(context.Background(), nil); err != nil {
		t.Errorf("Serve after Drain = %v, want nil (nothing to serve)", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("Stop = %v", err)
	}
}
