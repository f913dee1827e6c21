package httpentry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 and its key to dir and returns their
// paths and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "httpentry test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, t.TempDir())

	// mux: /hold as holdHandler, /events as sseHandler, the rest "ok".
	hold, sse := newHold(), newSSE()
	mux := http.NewServeMux()
	mux.Handle("/hold", hold)
	mux.Handle("/", sse)

	x := run(t, Config{CertFile: certFile, KeyFile: keyFile, StreamDrainWindow: 100 * time.Millisecond}, mux)
	x.base = strings.Replace(x.base, "http://", "https://", 1)
	x.tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	x.tr.ForceAttemptHTTP2 = true

	t.Run("serves HTTP/2 over TLS", func(t *testing.T) {
		resp, err := x.client.Get(x.base + "/ok")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			t.Errorf("got %d over %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
		}
	})

	t.Run("a refusal over HTTP/2 is a complete 503", func(t *testing.T) {
		x2 := run(t, Config{CertFile: certFile, KeyFile: keyFile}, mux)
		x2.base = strings.Replace(x2.base, "http://", "https://", 1)
		x2.tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		x2.tr.ForceAttemptHTTP2 = true
		x2.mustGet("/ok", 200)
		x2.endServe()
		x2.s.gate.Close() // Drain's first step
		resp, err := x2.client.Get(x2.base + "/ok")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 503 || resp.ProtoMajor != 2 ||
			resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `"draining"`) {
			t.Errorf("got %d over %s, Retry-After %q, %q, %v; want a complete 503 draining over HTTP/2",
				resp.StatusCode, resp.Proto, resp.Header.Get("Retry-After"), body, err)
		}
		if err := x2.drain(failAfter); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})

	t.Run("Drain over HTTP/2 finishes a request and closes a stream", func(t *testing.T) {
		res := make(chan string, 1)
		go func() {
			_, body, err := x.get("/hold")
			if err != nil {
				body = err.Error()
			}
			res <- body
		}()
		recv(t, hold.entered, "request to start")
		ends := openStreams(t, x, sse, 1, "")
		x.endServe()
		drained := make(chan error, 1)
		go func() { drained <- x.drain(failAfter) }()
		collect(t, ends, 1)
		recv(t, x.s.draining, "Drain to close the gate")
		close(hold.release)
		if got := recv(t, res, "response"); got != "held" {
			t.Errorf("in-flight request got %q, want held", got)
		}
		if err := recv(t, drained, "Drain"); err != nil {
			t.Errorf("Drain = %v", err)
		}
	})
}
