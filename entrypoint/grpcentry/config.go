package grpcentry

import (
	"crypto/tls"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/transport"
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
	transport.Addr(l, hasListener, &cfg.Addr, DefaultAddr)
	transport.Default(l, "MaxRecvMsgSize", &cfg.MaxRecvMsgSize, DefaultMaxRecvMsgSize)
	transport.Default(l, "MaxSendMsgSize", &cfg.MaxSendMsgSize, DefaultMaxSendMsgSize)
	transport.Default(l, "MaxConcurrentStreams", &cfg.MaxConcurrentStreams, DefaultMaxConcurrentStreams)
	if cfg.MaxConcurrentStreams > 1<<31 {
		l.Addf("MaxConcurrentStreams", "must be at most 2^31, got %d", cfg.MaxConcurrentStreams)
	}
	transport.Default(l, "KeepaliveTime", &cfg.KeepaliveTime, DefaultKeepaliveTime)
	transport.Default(l, "KeepaliveTimeout", &cfg.KeepaliveTimeout, DefaultKeepaliveTimeout)
	transport.Default(l, "KeepaliveMinTime", &cfg.KeepaliveMinTime, DefaultKeepaliveMinTime)
	transport.Default(l, "MaxConnectionIdle", &cfg.MaxConnectionIdle, DefaultMaxConnectionIdle)
	transport.Default(l, "MaxConnectionAge", &cfg.MaxConnectionAge, DefaultMaxConnectionAge)
	transport.Default(l, "MaxConnectionAgeGrace", &cfg.MaxConnectionAgeGrace, DefaultMaxConnectionAgeGrace)
	transport.Default(l, "ConnectionTimeout", &cfg.ConnectionTimeout, DefaultConnectionTimeout)
	transport.Default(l, "StreamDrainWindow", &cfg.StreamDrainWindow, DefaultStreamDrainWindow)
	return cfg, transport.LoadTLS(l, cfg.CertFile, cfg.KeyFile)
}
