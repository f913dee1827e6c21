package grpcentry

import (
	"cmp"
	"math"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/transport"
)

// The defaults for the fields of Config left at their zero value, which their
// docs state.
const (
	defaultName                  = "grpc"
	defaultAddr                  = ":9090"
	defaultMaxRecvMsgSize        = 4 << 20
	defaultMaxSendMsgSize        = 4 << 20
	defaultMaxMetadataBytes      = 1 << 20
	defaultMaxConcurrentStreams  = 100
	defaultMaxStreamResets       = 1000
	defaultStreamResetRate       = 33
	defaultKeepaliveTime         = 30 * time.Second
	defaultKeepaliveTimeout      = 10 * time.Second
	defaultKeepaliveMinTime      = 10 * time.Second
	defaultMaxConnectionIdle     = 5 * time.Minute
	defaultMaxConnectionAge      = 5 * time.Minute
	defaultMaxConnectionAgeGrace = 30 * time.Second
	defaultConnectionTimeout     = 10 * time.Second
	defaultStreamDrainWindow     = 5 * time.Second
)

// Config configures a Server. Every zero field takes the default its doc states, so
// the zero Config is a plaintext server on ":9090" with bounded messages, keepalive
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
	// MaxMetadataBytes caps the size of an RPC's metadata (its HTTP/2 header list,
	// as HPACK decodes it). A call with more is refused: the grpc-go client checks
	// the limit the server advertises and fails the call with INTERNAL before
	// sending; any other client has its stream reset, or its connection closed when
	// one value alone is longer than the limit. Default 1 MiB, the same as
	// httpentry's MaxHeaderBytes (grpc-go's own default is 16 MiB).
	MaxMetadataBytes int
	// MaxConcurrentStreams caps the RPCs open at once on one connection; a client
	// that opens more has the excess refused (RST_STREAM REFUSED_STREAM), and grpc-go
	// stops reading a connection while that many of its handlers run. Default 100,
	// the least RFC 9113 advises a peer to allow, so that one connection cannot hold
	// more than 100 handlers and 100 × MaxRecvMsgSize of buffers.
	MaxConcurrentStreams int
	// MaxConnections caps the connections open at once: at the cap the server stops
	// accepting, and new connections wait in the listening socket's backlog until
	// one closes (counted by servicewright_grpc_accept_paused_total). Default: the
	// one httpentry's MaxConns takes, from the process's open-file limit
	// (RLIMIT_NOFILE): a reserve of max(128, limit/4) is kept for the probe listener,
	// the backends and telemetry, and half of the rest is each public listener's —
	// 384 at the usual 1024.
	MaxConnections int
	// MaxStreamResets and StreamResetRate bound the streams a client may reset
	// (RST_STREAM): a token bucket of MaxStreamResets resets refilled at
	// StreamResetRate a second, per connection. A connection that resets more (an
	// HTTP/2 "rapid reset" flood, CVE-2023-44487) is sent a GOAWAY with
	// ENHANCE_YOUR_CALM and closed, and counted (Stats.ResetAbuses,
	// servicewright_grpc_reset_abuse_closed_total). For a minute after, a new
	// connection from the same IP starts with StreamResetRate resets in its bucket
	// rather than MaxStreamResets, so that an attacker who reconnects costs a few
	// streams a connection. Defaults 1000 and 33, those of nghttp2: a client that
	// cancels a few RPCs a second is never cut.
	MaxStreamResets, StreamResetRate int

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

// resolve fills in the defaults of the fields left zero and records every problem
// with cfg in l, under its field name. New checks the rest apart: Addr against
// WithListener (transport.Addr), and the certificate files it reads (transport.LoadTLS).
func (cfg Config) resolve(l *fault.Problems) Config {
	cfg.Name = cmp.Or(cfg.Name, defaultName)
	transport.Default(l, "MaxRecvMsgSize", &cfg.MaxRecvMsgSize, defaultMaxRecvMsgSize)
	transport.Default(l, "MaxSendMsgSize", &cfg.MaxSendMsgSize, defaultMaxSendMsgSize)
	transport.Default(l, "MaxMetadataBytes", &cfg.MaxMetadataBytes, defaultMaxMetadataBytes)
	if cfg.MaxMetadataBytes > math.MaxUint32 {
		l.Addf("MaxMetadataBytes", "must be at most 2^32-1, got %d", cfg.MaxMetadataBytes)
	}
	transport.Default(l, "MaxConcurrentStreams", &cfg.MaxConcurrentStreams, defaultMaxConcurrentStreams)
	if cfg.MaxConcurrentStreams > 1<<31 {
		l.Addf("MaxConcurrentStreams", "must be at most 2^31, got %d", cfg.MaxConcurrentStreams)
	}
	transport.Default(l, "MaxConnections", &cfg.MaxConnections, transport.DefaultMaxConns())
	transport.Default(l, "MaxStreamResets", &cfg.MaxStreamResets, defaultMaxStreamResets)
	transport.Default(l, "StreamResetRate", &cfg.StreamResetRate, defaultStreamResetRate)
	transport.Default(l, "KeepaliveTime", &cfg.KeepaliveTime, defaultKeepaliveTime)
	transport.Default(l, "KeepaliveTimeout", &cfg.KeepaliveTimeout, defaultKeepaliveTimeout)
	transport.Default(l, "KeepaliveMinTime", &cfg.KeepaliveMinTime, defaultKeepaliveMinTime)
	transport.Default(l, "MaxConnectionIdle", &cfg.MaxConnectionIdle, defaultMaxConnectionIdle)
	transport.Default(l, "MaxConnectionAge", &cfg.MaxConnectionAge, defaultMaxConnectionAge)
	transport.Default(l, "MaxConnectionAgeGrace", &cfg.MaxConnectionAgeGrace, defaultMaxConnectionAgeGrace)
	transport.Default(l, "ConnectionTimeout", &cfg.ConnectionTimeout, defaultConnectionTimeout)
	transport.Default(l, "StreamDrainWindow", &cfg.StreamDrainWindow, defaultStreamDrainWindow)
	return cfg
}
