package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// KubeAPIServerVersion is the kube-apiserver the tests run: built by
// scripts/kubeapiserver.sh (make test's deps step) into the cache directory.
const KubeAPIServerVersion = "v1.37.2"

// KubeAPIServerBinary returns where scripts/kubeapiserver.sh puts the binary:
// $SERVICEWRIGHT_CACHE or ~/.cache/servicewright, kube-apiserver-VERSION.
func KubeAPIServerBinary() string {
	cache := os.Getenv("SERVICEWRIGHT_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "servicewright")
	}
	return filepath.Join(cache, "kube-apiserver-"+KubeAPIServerVersion)
}

// KubeAPIServer is a kube-apiserver child process on 127.0.0.1 on a one-member etcd
// of its own, with RBAC on and anonymous requests refused: clients authenticate with
// a certificate of the CA it generated (ClientCert).
type KubeAPIServer struct {
	etcd   *Etcd
	dir    string
	port   int
	listen string // an address besides 127.0.0.1 the serving certificate names; "" for none
	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
	bin    string
	args   []string

	mu   sync.Mutex
	proc *process
}

// KubeOption changes how StartKubeAPIServer starts the server.
type KubeOption func(*KubeAPIServer)

// KubeListen makes the server listen on every address, its certificate name addr
// too: for clients in a Netns.
func KubeListen(addr string) KubeOption { return func(k *KubeAPIServer) { k.listen = addr } }

const kubeReadyTimeout = 90 * time.Second

// StartKubeAPIServer starts etcd and the apiserver and returns once /readyz answers
// ok. When the binary is missing (scripts/kubeapiserver.sh not run) or etcd is, the
// error wraps ErrMissing.
func StartKubeAPIServer(opts ...KubeOption) (*KubeAPIServer, error) {
	bin := KubeAPIServerBinary()
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w: %s not found (run scripts/kubeapiserver.sh, or make deps)", ErrMissing, bin)
	}
	e, err := StartEtcd(1)
	if err != nil {
		return nil, err
	}
	k := &KubeAPIServer{etcd: e}
	for _, o := range opts {
		o(k)
	}
	if err := k.start(bin); err != nil {
		_ = k.Stop()
		return nil, err
	}
	return k, nil
}

func (k *KubeAPIServer) start(bin string) error {
	var err error
	if k.dir, err = makeDir(os.TempDir(), "testenv-kube-*"); err != nil {
		return err
	}
	if err := k.writeCredentials(); err != nil {
		return fmt.Errorf("testenv: kube-apiserver: credentials: %w", err)
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	k.port = ports[0]
	f := func(name string) string { return filepath.Join(k.dir, name) }
	bind := "127.0.0.1"
	if k.listen != "" {
		bind = "0.0.0.0"
	}
	k.bin = bin
	k.args = []string{
		"--etcd-servers", k.etcd.Endpoints()[0],
		"--bind-address", bind,
		"--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(k.port),
		"--tls-cert-file", f("serving.crt"), "--tls-private-key-file", f("serving.key"),
		"--client-ca-file", f("ca.crt"),
		"--authorization-mode", "RBAC",
		"--anonymous-auth=false",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", f("sa.pub"), "--service-account-signing-key-file", f("sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/24",
		"--endpoint-reconciler-type", "none",
		"--enable-priority-and-fairness=false",
		"--cert-dir", f("certs"),
		"-v", "0",
	}
	return k.spawn()
}

// spawn runs the server with k.args and waits until it is ready.
func (k *KubeAPIServer) spawn() error {
	p, err := spawn(k.bin, k.args, filepath.Join(k.dir, "apiserver.log"), nil)
	if err != nil {
		return fmt.Errorf("testenv: kube-apiserver: %w", err)
	}
	k.proc = p
	cert, err := k.ClientCert("testenv-admin", "system:masters")
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AddCert(k.ca)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	deadline := time.Now().Add(kubeReadyTimeout)
	for {
		if !p.running() {
			return fmt.Errorf("testenv: kube-apiserver exited before it was ready; output:\n%s", p.logTail())
		}
		if resp, err := hc.Get(k.URL() + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testenv: kube-apiserver not ready within %v; output:\n%s", kubeReadyTimeout, p.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// URL returns https://127.0.0.1:PORT.
func (k *KubeAPIServer) URL() string {
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(k.port))
}

// CAFile returns the path of the PEM CA that signed the serving and client
// certificates.
func (k *KubeAPIServer) CAFile() string { return filepath.Join(k.dir, "ca.crt") }

// ClientCert returns a client certificate for user in groups, signed by the CA the
// server trusts ("system:masters" may do anything; a user in no group, nothing
// until a Role grants it).
func (k *KubeAPIServer) ClientCert(user string, groups ...string) (tls.Certificate, error) {
	certPEM, keyPEM, err := k.issue(pkix.Name{CommonName: user, Organization: groups}, false)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// ClientCertPEM is ClientCert as PEM blocks, for a kubeconfig.
func (k *KubeAPIServer) ClientCertPEM(user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	return k.issue(pkix.Name{CommonName: user, Organization: groups}, false)
}

// writeCredentials makes the CA, the serving certificate and the service-account
// key pair in k.dir.
func (k *KubeAPIServer) writeCredentials() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testenv-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if k.ca, err = x509.ParseCertificate(der); err != nil {
		return err
	}
	k.key = key
	servingCert, servingKey, err := k.issue(pkix.Name{CommonName: "kube-apiserver"}, true)
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	saPriv, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"serving.crt": servingCert, "serving.key": servingKey,
		"sa.pub": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saDER}),
		"sa.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saPriv}),
	}
	var errs []error
	for name, b := range files {
		errs = append(errs, os.WriteFile(filepath.Join(k.dir, name), b, 0o600))
	}
	return errors.Join(errs...)
}

// issue signs a certificate for subject: a serving one for 127.0.0.1, or a client one.
func (k *KubeAPIServer) issue(subject pkix.Name, serving bool) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if serving {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		if k.listen != "" {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(k.listen))
		}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, k.ca, &key.PublicKey, k.key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}

// Kill ends the apiserver with SIGKILL, as a crash would; its etcd keeps the data.
func (k *KubeAPIServer) Kill() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.proc == nil {
		return nil
	}
	return k.proc.kill()
}

// Restart starts the apiserver again on the same port and etcd, once it is not
// running, and returns when it is ready.
func (k *KubeAPIServer) Restart() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.proc != nil && k.proc.running() {
		if err := k.proc.stop(syscall.SIGTERM, 10*time.Second); err != nil {
			return err
		}
	}
	return k.spawn()
}

// Stop ends the apiserver and its etcd and removes their directories.
func (k *KubeAPIServer) Stop() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var errs []error
	if k.proc != nil {
		errs = append(errs, k.proc.stop(syscall.SIGTERM, 10*time.Second))
	}
	if k.dir != "" {
		errs = append(errs, os.RemoveAll(k.dir))
	}
	if k.etcd != nil {
		errs = append(errs, k.etcd.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testenv: kube-apiserver stop: %w", err)
	}
	return nil
}

// WriteKubeconfig writes a kubeconfig for server (URL, or k.URL() when empty) and a
// client certificate of user in groups to path.
func (k *KubeAPIServer) WriteKubeconfig(path, server, user string, groups ...string) error {
	certPEM, keyPEM, err := k.ClientCertPEM(user, groups...)
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(k.CAFile())
	if err != nil {
		return err
	}
	if server == "" {
		server = k.URL()
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: %s
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: test
  context: {cluster: test, user: %s}
current-context: test
`, server, b64(ca), user, b64(certPEM), b64(keyPEM), user)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// ListenURL returns https://ADDR:PORT for the KubeListen address.
func (k *KubeAPIServer) ListenURL() string {
	return "https://" + net.JoinHostPort(k.listen, strconv.Itoa(k.port))
}
