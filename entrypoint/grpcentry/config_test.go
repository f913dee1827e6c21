package grpcentry_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"

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
