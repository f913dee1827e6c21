package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/fault"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// keyPair writes a self-signed certificate and its key to dir and returns their paths.
func keyPair(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	write := func(path, typ string, b []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(certFile, "CERTIFICATE", der)
	write(keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

// fields returns the fields the problems in l name, in order.
func fields(l *fault.Problems) []string {
	var ce *fault.ConfigError
	if !errors.As(l.Err(), &ce) {
		return nil
	}
	var out []string
	for _, p := range ce.Problems {
		out = append(out, p.Field)
	}
	return out
}

func TestLoadTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := keyPair(t, dir)
	other, _ := keyPair(t, t.TempDir())
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name       string
		cert, key  string
		wantConfig bool
		want       []string
	}{
		{"neither: no TLS", "", "", false, nil},
		{"a valid pair", cert, key, true, nil},
		{"only one of the two", cert, "", false, []string{"CertFile, KeyFile"}},
		{"each unreadable file is named", missing, missing, false, []string{"CertFile", "KeyFile"}},
		{"a pair that does not match", other, key, false, []string{"CertFile, KeyFile"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l fault.Problems
			c := LoadTLS(&l, tc.cert, tc.key)
			if (c != nil) != tc.wantConfig {
				t.Fatalf("config = %v, want one: %v", c, tc.wantConfig)
			}
			if c != nil && (len(c.Certificates) != 1 || c.MinVersion != tls.VersionTLS12) {
				t.Fatalf("config = %+v", c)
			}
			if got := fields(&l); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("problems name %q, want %q (%v)", got, tc.want, l.Err())
			}
		})
	}
}

func TestDefault(t *testing.T) {
	var l fault.Problems
	d, n, neg := time.Duration(0), 7, -1
	Default(&l, "D", &d, time.Second)
	Default(&l, "N", &n, 9)
	Default(&l, "Neg", &neg, 3)
	if d != time.Second || n != 7 || neg != -1 {
		t.Fatalf("d=%v n=%d neg=%d", d, n, neg)
	}
	if got := fields(&l); len(got) != 1 || got[0] != "Neg" {
		t.Fatalf("problems name %q, want [Neg]", got)
	}
}

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "a"})
	if err := Register(reg, a); err != nil {
		t.Fatal(err)
	}
	b := prometheus.NewCounter(prometheus.CounterOpts{Name: "b_total", Help: "b"})
	again := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "a"})
	err := Register(reg, b, again)
	if !AlreadyRegistered(err) {
		t.Fatalf("Register with a name taken = %v", err)
	}
	if !reg.Unregister(a) || reg.Unregister(b) {
		t.Fatal("a failed Register left b registered, or dropped a")
	}
	if AlreadyRegistered(errors.New("other")) || AlreadyRegistered(nil) {
		t.Fatal("AlreadyRegistered of another error")
	}
}

func TestListen(t *testing.T) {
	ln, err := Listen(context.Background(), nil, "127.0.0.1:0", "http")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Listen(context.Background(), ln, "ignored", "http"); got != ln || err != nil {
		t.Fatalf("Listen with a listener = %v, %v", got, err)
	}
	_, err = Listen(context.Background(), nil, ln.Addr().String(), "http")
	var op *net.OpError
	if !errors.As(err, &op) || !strings.HasPrefix(err.Error(), "http: listen tcp") {
		t.Fatalf("Listen on a taken port = %v", err)
	}
	if err := CloseListener(ln, "http"); err != nil {
		t.Fatal(err)
	}
	if err := CloseListener(ln, "http"); err != nil {
		t.Fatalf("closing a closed listener = %v", err)
	}
}

func TestAddr(t *testing.T) {
	var l fault.Problems
	empty, set, withListener := "", ":9000", ":9001"
	Addr(&l, false, &empty, ":8080")
	Addr(&l, false, &set, ":8080")
	Addr(&l, true, &withListener, ":8080")
	if empty != ":8080" || set != ":9000" {
		t.Fatalf("empty=%q set=%q", empty, set)
	}
	if got := fields(&l); len(got) != 1 || got[0] != "Addr" {
		t.Fatalf("problems name %q, want [Addr]", got)
	}
}

func TestStreams(t *testing.T) {
	var s Streams[*int]
	a, b, c := new(int), new(int), new(int)
	if !s.Add(a) || !s.Add(b) {
		t.Fatal("Add to an unsealed set = false")
	}
	if got := s.Snapshot(false); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Snapshot = %v, want [a b]", got)
	}
	s.Remove(a)
	if got := s.Snapshot(true); len(got) != 1 || got[0] != b {
		t.Fatalf("Snapshot after Remove = %v, want [b]", got)
	}
	if s.Add(c) {
		t.Fatal("Add to a sealed set = true")
	}
	if got := s.Snapshot(false); len(got) != 2 || got[0] != b || got[1] != c {
		t.Fatalf("a late stream is not held: %v", got)
	}
}

func TestNewRED(t *testing.T) {
	reg := prometheus.NewRegistry()
	o := REDOpts{Protocol: "x", RequestLabels: []string{"code"}, DurationLabels: []string{"code"},
		RequestsHelp: "r", DurationHelp: "d", RefusedHelp: "f", PanicsHelp: "p", InFlightHelp: "i"}
	m, err := NewRED(reg, "a", o, func() int { return 3 })
	if err != nil {
		t.Fatal(err)
	}
	m.Requests.WithLabelValues("200").Inc()
	m.Duration.WithLabelValues("200").Observe(1)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
		labelled := false
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labelled = labelled || l.GetName() == "entrypoint" && l.GetValue() == "a"
		}
		if !labelled {
			t.Errorf("%s is not labelled entrypoint=a", mf.GetName())
		}
		if mf.GetName() == "servicewright_x_in_flight" && mf.GetMetric()[0].GetGauge().GetValue() != 3 {
			t.Errorf("in_flight = %v", mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	want := "servicewright_x_in_flight servicewright_x_panics_total servicewright_x_refused_draining_total servicewright_x_request_duration_seconds servicewright_x_requests_total"
	if strings.Join(names, " ") != want {
		t.Fatalf("metrics = %v, want %s", names, want)
	}
	if _, err := NewRED(reg, "a", o, func() int { return 0 }); !AlreadyRegistered(err) {
		t.Fatalf("a second NewRED under the same name = %v", err)
	}
	if _, err := NewRED(reg, "b", o, func() int { return 0 }); err != nil {
		t.Fatalf("NewRED under another entrypoint name = %v", err)
	}
}
