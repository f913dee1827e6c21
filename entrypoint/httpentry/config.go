package httpentry

import (
	"cmp"
	"math"
	"strconv"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/transport"
)

// Defaults for the fields of Config left at their zero value; each field's doc
// states its own. The exported ones are those a peer server configured like this
// one takes (the benchmarks' peers do).
const (
	defaultName              = "http"
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 5 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 1 << 20

	defaultAddr              = ":8080"
	defaultMaxHeaderFields   = 100
	defaultStreamDrainWindow = 5 * time.Second
	defaultRetryAfter        = time.Second
)

// Config configures a Server. Every zero field takes the default its doc states, so
// the zero Config is a plain-HTTP server on ":8080" with safe timeouts.
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
	// MaxHeaderFields caps the number of header fields of an HTTP/1 request on a
	// plaintext listener. net/http parses every field of a head into the request's
	// map before any handler, or admission, runs, and a MaxHeaderBytes block holds
	// tens of thousands of small fields (each costs far more in memory than on the
	// wire); so the fields are counted as the head is read, and a request with more
	// is answered 431 Request Header Fields Too Large and its connection closed.
	// Default 100, as common servers allow; a negative value is a ConfigError. It does
	// not apply under TLS (CertFile): there HTTP/1.1 is bounded by MaxHeaderBytes
	// alone, and HTTP/2 by MaxHeaderBytes as its header list size, in which each
	// field counts 32 bytes besides its name and value (RFC 9113 §6.5.2), so about
	// 32,000 fields at most at the default.
	MaxHeaderFields int
	// MaxConns caps the connections open at once. At the cap the server stops
	// accepting: new connections wait in the listen backlog, costing no descriptor,
	// until one closes; this is counted in servicewright_http_accept_paused_total and
	// in the drain report. Zero takes a default derived from the process's
	// RLIMIT_NOFILE so that the probe listener, the backends and telemetry
	// keep descriptors: (soft − max(128, soft/4)) / 2, 384 at a limit of 1024. A
	// negative value is a ConfigError naming MaxConns.
	MaxConns int

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

// resolve fills in the defaults of the fields left zero and records every problem
// with cfg in l, under its field name. New checks the rest apart: Addr against
// WithListener (transport.Addr), and the certificate files it reads (transport.LoadTLS).
func (cfg Config) resolve(l *fault.Problems) Config {
	cfg.Name = cmp.Or(cfg.Name, defaultName)
	transport.Default(l, "ReadHeaderTimeout", &cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	transport.Default(l, "ReadTimeout", &cfg.ReadTimeout, DefaultReadTimeout)
	transport.Default(l, "WriteTimeout", &cfg.WriteTimeout, 0)
	transport.Default(l, "IdleTimeout", &cfg.IdleTimeout, DefaultIdleTimeout)
	transport.Default(l, "StreamDrainWindow", &cfg.StreamDrainWindow, defaultStreamDrainWindow)
	transport.Default(l, "RetryAfter", &cfg.RetryAfter, defaultRetryAfter)
	transport.Default(l, "MaxHeaderBytes", &cfg.MaxHeaderBytes, DefaultMaxHeaderBytes)
	transport.Default(l, "MaxHeaderFields", &cfg.MaxHeaderFields, defaultMaxHeaderFields)
	transport.Default(l, "MaxConns", &cfg.MaxConns, transport.DefaultMaxConns())
	return cfg
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
