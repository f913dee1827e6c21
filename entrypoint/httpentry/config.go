package httpentry

import (
	"crypto/tls"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// Defaults for the fields of Config left at their zero value.
const (
	DefaultName              = "http"
	DefaultAddr              = ":8080"
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 5 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 1 << 20
	DefaultStreamDrainWindow = 5 * time.Second
	DefaultRetryAfter        = time.Second
)

// Config configures a Server. Every zero field takes the default named after it, so
// the zero Config is a plain-HTTP server on DefaultAddr with safe timeouts.
type Config struct {
	// Name identifies the entrypoint in logs, metrics and errors. Default "http".
	Name string
	// Addr is the TCP address Bind listens on. Default ":8080". Must be empty when
	// the listener is given with WithListener.
	Addr string

	// ReadHeaderTimeout is how long a client may take to send a request's headers;
	// a client that is slower is disconnected. Default 5s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds how long a client may take to send a whole request, headers
	// and body, counted from the request's first byte; a body read past it fails, so
	// the handler returns, and the connection is closed. Default 5s, below the Host's
	// default drain grace, so that a slow upload can neither hold a handler for long
	// nor turn a graceful stop into an overrun; raise it for large uploads on slow
	// links. It does not cut streams: net/http lifts the read deadline once the
	// request's body has been read (an SSE GET has none) and when a connection is
	// hijacked (a WebSocket).
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response. Default 0: none, so that streams (SSE)
	// are not cut; bound slow handlers with their own ctx instead.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next request.
	// Default 60s.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the size of a request's headers. Default 1 MiB.
	MaxHeaderBytes int

	// CertFile and KeyFile, both or neither, are PEM files with the certificate
	// chain and its private key. With them the server speaks TLS, and HTTP/2 as well
	// as HTTP/1.1. They are read once, by New.
	CertFile, KeyFile string

	// StreamDrainWindow is the longest span over which Drain (and DrainStreams)
	// spreads the closing of streams, so that their clients reconnect elsewhere a
	// few at a time instead of all at once. Default 5s.
	StreamDrainWindow time.Duration
	// RetryAfter is what a request refused while draining is told to wait before
	// retrying, in the Retry-After header; it is rounded up to whole seconds.
	// Default 1s.
	RetryAfter time.Duration
}

// resolve fills in defaults and records every problem with cfg in l. hasListener
// says whether WithListener supplied the listener. It returns the completed
// Config and, when CertFile and KeyFile are set and valid, the TLS configuration.
func (cfg Config) resolve(hasListener bool, l *fault.Problems) (Config, *tls.Config) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	switch {
	case hasListener && cfg.Addr != "":
		l.Addf("Addr", "must be empty when a listener is given with WithListener, got %q", cfg.Addr)
	case !hasListener && cfg.Addr == "":
		cfg.Addr = DefaultAddr
	}
	defaultDuration(l, "ReadHeaderTimeout", &cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	defaultDuration(l, "ReadTimeout", &cfg.ReadTimeout, DefaultReadTimeout)
	defaultDuration(l, "WriteTimeout", &cfg.WriteTimeout, 0)
	defaultDuration(l, "IdleTimeout", &cfg.IdleTimeout, DefaultIdleTimeout)
	defaultDuration(l, "StreamDrainWindow", &cfg.StreamDrainWindow, DefaultStreamDrainWindow)
	defaultDuration(l, "RetryAfter", &cfg.RetryAfter, DefaultRetryAfter)
	switch {
	case cfg.MaxHeaderBytes < 0:
		l.Addf("MaxHeaderBytes", "must not be negative, got %d", cfg.MaxHeaderBytes)
	case cfg.MaxHeaderBytes == 0:
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return cfg, cfg.loadTLS(l)
}

func defaultDuration(l *fault.Problems, field string, d *time.Duration, def time.Duration) {
	switch {
	case *d < 0:
		l.Addf(field, "must not be negative, got %v", *d)
	case *d == 0:
		*d = def
	}
}

// loadTLS reads the key pair. Each file is read on its own so that a problem names
// the file it is about.
func (cfg Config) loadTLS(l *fault.Problems) *tls.Config {
	if cfg.CertFile == "" && cfg.KeyFile == "" {
		return nil
	}
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		l.Addf("CertFile, KeyFile", "must be set together, got CertFile %q and KeyFile %q", cfg.CertFile, cfg.KeyFile)
		return nil
	}
	certPEM, certErr := os.ReadFile(cfg.CertFile)
	if certErr != nil {
		l.Addf("CertFile", "cannot read %q: %v", cfg.CertFile, certErr)
	}
	keyPEM, keyErr := os.ReadFile(cfg.KeyFile)
	if keyErr != nil {
		l.Addf("KeyFile", "cannot read %q: %v", cfg.KeyFile, keyErr)
	}
	if certErr != nil || keyErr != nil {
		return nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		l.Addf("CertFile, KeyFile", "%q and %q are not a valid key pair: %v", cfg.CertFile, cfg.KeyFile, err)
		return nil
	}
	// NextProtos is left empty: ServeTLS then offers h2 and http/1.1.
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// retryAfterHeader is d in whole seconds, rounded up, as Retry-After wants it.
func retryAfterHeader(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10)
}

// The JSON bodies of a request refused while draining and of one whose handler
// panicked.
const (
	drainingBody = `{"code":"draining","message":"the server is shutting down; retry the request"}` + "\n"
	internalBody = `{"code":"internal","message":"internal server error"}` + "\n"
)
