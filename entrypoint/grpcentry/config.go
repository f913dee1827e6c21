package grpcentry

import (
	"crypto/tls"
	"os"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// Defaults for the fields of Config left at their zero value.
const (
	DefaultName                  = "grpc"
	DefaultAddr                  = ":9090"
	DefaultMaxRecvMsgSize        = 4 << 20
	DefaultMaxSendMsgSize        = 4 << 20
	DefaultMaxConcurrentStreams  = 1000
	DefaultKeepaliveTime         = 30 * time.Second
	DefaultKeepaliveTimeout      = 10 * time.Second
	DefaultKeepaliveMinTime      = 10 * time.Second
	DefaultMaxConnectionIdle     = 5 * time.Minute
	DefaultMaxConnectionAge      = 5 * time.Minute
	DefaultMaxConnectionAgeGrace = 30 * time.Second
	DefaultConnectionTimeout     = 10 * time.Second
	DefaultStreamDrainWindow     = 5 * time.Second
)

// Config configures a Server. Every zero field takes the default named after it, so
// the zero Config is a plaintext server on DefaultAddr with bounded messages, keepalive
// enforcement and a connection age that makes clients rebalance.
type Config struct {
	// Name identifies the entrypoint in logs, metrics and errors. Default "grpc".
	Name string
	// Addr is the TCP address Bind listens on. Default ":9090". Must be empty when the
	// listener is given with WithListener.
	Addr string

	// CertFile and KeyFile, both or neither, are PEM files with the certificate chain
	// and its private key; with them the server speaks TLS. They are read once, by New.
	CertFile, KeyFile string

	// MaxRecvMsgSize and MaxSendMsgSize cap a message's size in bytes, each way.
	// Default 4 MiB both.
	MaxRecvMsgSize, MaxSendMsgSize int
	// MaxConcurrentStreams caps the RPCs open at once on one connection. Default 1000.
	MaxConcurrentStreams int

	// KeepaliveTime is how long a connection may be silent before the server pings
	// it, and KeepaliveTimeout how long the ping may go unanswered before the
	// connection is closed. Defaults 30s and 10s.
	KeepaliveTime, KeepaliveTimeout time.Duration
	// KeepaliveMinTime is the enforcement policy: a client that pings more often is
	// sent a GOAWAY. Pings without an open RPC are allowed. Default 10s.
	KeepaliveMinTime time.Duration
	// MaxConnectionIdle closes a connection without an RPC for this long. Default 5m.
	MaxConnectionIdle time.Duration
	// MaxConnectionAge makes a client reconnect (a GOAWAY, jittered by ±10%) after
	// this long, so that load spreads onto replicas that started later; the RPCs
	// still open then get MaxConnectionAgeGrace to end before the connection is cut.
	// Defaults 5m and 30s.
	MaxConnectionAge, MaxConnectionAgeGrace time.Duration
	// ConnectionTimeout bounds a new connection's handshake (TLS and HTTP/2
	// settings). Default 10s.
	ConnectionTimeout time.Duration

	// StreamDrainWindow is the longest span over which Drain spreads the closing of
	// the streaming RPCs, so that their clients reconnect elsewhere a few at a time.
	// Default 5s.
	StreamDrainWindow time.Duration
}

// resolve fills in defaults and records every problem with cfg in l. It returns the
// completed Config and, when CertFile and KeyFile are set and valid, the TLS
// configuration.
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
	defaultInt(l, "MaxRecvMsgSize", &cfg.MaxRecvMsgSize, DefaultMaxRecvMsgSize)
	defaultInt(l, "MaxSendMsgSize", &cfg.MaxSendMsgSize, DefaultMaxSendMsgSize)
	defaultInt(l, "MaxConcurrentStreams", &cfg.MaxConcurrentStreams, DefaultMaxConcurrentStreams)
	if cfg.MaxConcurrentStreams > 1<<31 {
		l.Addf("MaxConcurrentStreams", "must be at most 2^31, got %d", cfg.MaxConcurrentStreams)
	}
	defaultDuration(l, "KeepaliveTime", &cfg.KeepaliveTime, DefaultKeepaliveTime)
	defaultDuration(l, "KeepaliveTimeout", &cfg.KeepaliveTimeout, DefaultKeepaliveTimeout)
	defaultDuration(l, "KeepaliveMinTime", &cfg.KeepaliveMinTime, DefaultKeepaliveMinTime)
	defaultDuration(l, "MaxConnectionIdle", &cfg.MaxConnectionIdle, DefaultMaxConnectionIdle)
	defaultDuration(l, "MaxConnectionAge", &cfg.MaxConnectionAge, DefaultMaxConnectionAge)
	defaultDuration(l, "MaxConnectionAgeGrace", &cfg.MaxConnectionAgeGrace, DefaultMaxConnectionAgeGrace)
	defaultDuration(l, "ConnectionTimeout", &cfg.ConnectionTimeout, DefaultConnectionTimeout)
	defaultDuration(l, "StreamDrainWindow", &cfg.StreamDrainWindow, DefaultStreamDrainWindow)
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

func defaultInt(l *fault.Problems, field string, n *int, def int) {
	switch {
	case *n < 0:
		l.Addf(field, "must not be negative, got %d", *n)
	case *n == 0:
		*n = def
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
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}
