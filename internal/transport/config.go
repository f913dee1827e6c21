package transport

import (
	"crypto/tls"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// maxPEMBytes caps each PEM file LoadTLS reads: a certificate chain or a key is a
// few KiB.
const maxPEMBytes = 1 << 20

// LoadTLS reads the key pair of certFile and keyFile and returns the server TLS
// configuration (TLS 1.2 or later), or nil when both are empty. Each is read bounded
// (safe.ReadFile): a regular file of at most 1 MiB, never a blocking open. Each file is read on
// its own so that a problem names the fields it is about ("CertFile", "KeyFile", or
// both when they are set apart or do not match); problems go to l and nil is
// returned. NextProtos is left empty: the caller's server fills in its protocols.
func LoadTLS(l *fault.Problems, certFile, keyFile string) *tls.Config {
	if certFile == "" && keyFile == "" {
		return nil
	}
	if certFile == "" || keyFile == "" {
		l.Addf("CertFile, KeyFile", "must be set together, got CertFile %q and KeyFile %q", certFile, keyFile)
		return nil
	}
	certPEM, certErr := safe.ReadFile(certFile, maxPEMBytes)
	if certErr != nil {
		l.Addf("CertFile", "cannot read %q: %v", certFile, certErr)
	}
	keyPEM, keyErr := safe.ReadFile(keyFile, maxPEMBytes)
	if keyErr != nil {
		l.Addf("KeyFile", "cannot read %q: %v", keyFile, keyErr)
	}
	if certErr != nil || keyErr != nil {
		return nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		l.Addf("CertFile, KeyFile", "%q and %q are not a valid key pair: %v", certFile, keyFile, err)
		return nil
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// Default sets a zero *v to def and records a negative one in l under field.
func Default[T int | time.Duration](l *fault.Problems, field string, v *T, def T) {
	switch {
	case *v < 0:
		l.Addf(field, "must not be negative, got %v", *v)
	case *v == 0:
		*v = def
	}
}

// Addr checks a Config.Addr against WithListener: it must be empty when a listener
// was given (hasListener), and takes def when neither was.
func Addr(l *fault.Problems, hasListener bool, addr *string, def string) {
	switch {
	case hasListener && *addr != "":
		l.Addf("Addr", "must be empty when a listener is given with WithListener, got %q", *addr)
	case !hasListener && *addr == "":
		*addr = def
	}
}
