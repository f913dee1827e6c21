package transport

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// The default connection cap of a public listener (Config.MaxConns left at zero) is
// derived from the process's file-descriptor limit, so that the connections of the
// public listeners can never take the descriptors the probe listener, the backends'
// pools and telemetry need:
//
//	reserve = max(ConnReserveMin, soft/4)
//	cap     = max(MinDefaultMaxConns, (soft − reserve) / PublicListeners)
//
// where soft is RLIMIT_NOFILE's soft limit (Go raises it to the hard limit at start),
// taken as 1<<20 when unlimited and as 4096 where there is no such limit. At 1024
// that is 384 per listener, leaving 256 descriptors for the rest of the process.
const (
	ConnReserveMin     = 128 // descriptors always left to the process beside the public listeners
	PublicListeners    = 2   // the public listeners that share the rest: one HTTP, one gRPC
	MinDefaultMaxConns = 8
)

// DefaultMaxConns is the connection cap of a public listener whose MaxConns is zero,
// computed from the process's current RLIMIT_NOFILE as the formula above says.
func DefaultMaxConns() int { return maxConnsFor(nofileLimit()) }

// ProbeMaxConns is the probe listener's connection cap, taken from the reserve the
// formula above leaves beside the public listeners: a quarter of it, at least
// MinDefaultMaxConns (64 at a limit of 1024). The kubelet opens one connection per
// probe and the scraper one or two: the rest of the reserve stays for the backends.
func ProbeMaxConns() int { return probeConnsFor(nofileLimit()) }

func probeConnsFor(soft int) int { return max(MinDefaultMaxConns, max(ConnReserveMin, soft/4)/4) }

func maxConnsFor(soft int) int {
	reserve := max(ConnReserveMin, soft/4)
	return max(MinDefaultMaxConns, (soft-reserve)/PublicListeners)
}

// pauseLogEvery spaces the warnings that a listener is at its cap.
const pauseLogEvery = 10 * time.Second

// ConnCap caps the connections a server holds open at once and counts what the cap
// held back. Make one with NewConnCap when the server is made, wrap its listening
// socket with Listener when it serves, and register its metrics with Collectors.
//
// At the cap the listener stops calling accept(2): new connections wait in the
// socket's backlog, costing no descriptor, and are accepted one by one as open ones
// close. Nothing is refused or reset by the cap itself; a client whose connection
// waits in the backlog longer than it cares to gives up, or, once the backlog is full,
// the kernel drops its handshake and it retries. Accepting and closing at once was not
// chosen: it spends a descriptor per refused connection, which is exactly what runs
// out, and spins under a flood.
type ConnCap struct {
	max   int
	slots chan struct{} // one token per open connection
	log   *zap.Logger

	peak     atomic.Int64
	pauses   atomic.Uint64 // times Accept found the cap reached and waited
	pausedNs atomic.Int64  // time spent waiting so
	accepted atomic.Uint64

	mu      sync.Mutex
	lastLog time.Time
}

// NewConnCap returns a cap of n connections (at least 1) whose warnings go to log
// (nil: none).
func NewConnCap(n int, log *zap.Logger) *ConnCap {
	if log == nil {
		log = zap.NewNop()
	}
	n = max(n, 1)
	return &ConnCap{max: n, slots: make(chan struct{}, n), log: log}
}

// SetLogger replaces the logger of the warnings (nil: none). Call it before Listener.
func (c *ConnCap) SetLogger(log *zap.Logger) {
	if log == nil {
		log = zap.NewNop()
	}
	c.log = log
}

// ConnStats are what a ConnCap counted.
type ConnStats struct {
	Max       int           // the cap
	Open      int           // connections open now
	Peak      int           // the most open at once
	Accepted  uint64        // connections accepted
	Paused    uint64        // times accepting paused at the cap
	PausedFor time.Duration // time spent paused, new connections waiting in the backlog
}

// Stats returns the counts so far.
func (c *ConnCap) Stats() ConnStats {
	return ConnStats{Max: c.max, Open: len(c.slots), Peak: int(c.peak.Load()), Accepted: c.accepted.Load(),
		Paused: c.pauses.Load(), PausedFor: time.Duration(c.pausedNs.Load())}
}

// Report is Stats in a few words, for a drain report: "conns_max=384 conns_peak=384
// accept_paused=3 paused_for=12.5s" (the last two only when the cap was reached).
func (c *ConnCap) Report() string {
	s := c.Stats()
	r := fmt.Sprintf("conns_max=%d conns_peak=%d", s.Max, s.Peak)
	if s.Paused > 0 {
		r += fmt.Sprintf(" accept_paused=%d paused_for=%s", s.Paused, s.PausedFor.Round(time.Millisecond))
	}
	return r
}

// Collectors are the cap's metrics, servicewright_<protocol>_…: connections_open and
// connections_max (gauges), accept_paused_total (times accepting paused at the cap)
// and accept_paused_seconds_total (time new connections were left in the backlog so).
func (c *ConnCap) Collectors(protocol string) []prometheus.Collector {
	p := "servicewright_" + protocol + "_"
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: p + "connections_open",
			Help: "Connections open on the public listener."}, func() float64 { return float64(len(c.slots)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: p + "connections_max",
			Help: "The public listener's connection cap (MaxConns)."}, func() float64 { return float64(c.max) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: p + "accept_paused_total",
			Help: "Times the listener reached its connection cap and stopped accepting; new connections wait in the backlog."},
			func() float64 { return float64(c.pauses.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: p + "accept_paused_seconds_total",
			Help: "Time the listener spent at its connection cap, not accepting."},
			func() float64 { return time.Duration(c.pausedNs.Load()).Seconds() }),
	}
}

// Listener returns ln capped: its Accept waits while the cap's connections are all
// open, and each connection it returns frees its place when closed. Closing the
// returned listener closes ln and wakes an Accept that waits. It does not cap
// connections accepted from ln by other means.
func (c *ConnCap) Listener(ln net.Listener) net.Listener {
	return &cappedListener{Listener: ln, cap: c, closed: make(chan struct{})}
}

type cappedListener struct {
	net.Listener
	cap       *ConnCap
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *cappedListener) Accept() (net.Conn, error) {
	c := l.cap
	select {
	case c.slots <- struct{}{}:
	default:
		if err := l.wait(); err != nil {
			return nil, err
		}
	}
	conn, err := l.Listener.Accept()
	if err != nil {
		<-c.slots
		return nil, err
	}
	c.accepted.Add(1)
	if n := int64(len(c.slots)); n > c.peak.Load() {
		c.peak.Store(n) // the accept loop is the only writer
	}
	return &cappedConn{Conn: conn, slots: c.slots}, nil
}

// wait holds the accept loop at the cap until a connection closes or the listener
// does.
func (l *cappedListener) wait() error {
	c := l.cap
	c.pauses.Add(1)
	began := time.Now()
	c.warn(began)
	defer func() { c.pausedNs.Add(int64(time.Since(began))) }()
	select {
	case c.slots <- struct{}{}:
		return nil
	case <-l.closed:
		return net.ErrClosed
	}
}

// warn logs that the cap was reached, at most once every pauseLogEvery.
func (c *ConnCap) warn(now time.Time) {
	c.mu.Lock()
	if !c.lastLog.IsZero() && now.Sub(c.lastLog) < pauseLogEvery {
		c.mu.Unlock()
		return
	}
	c.lastLog = now
	c.mu.Unlock()
	c.log.Warn("connection cap reached: not accepting until a connection closes; new ones wait in the listen backlog",
		zap.Int("max_conns", c.max), zap.Uint64("times_paused", c.pauses.Load()))
}

func (l *cappedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// cappedConn frees its place in the cap when closed, once.
type cappedConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

// CloseWrite half-closes the connection when it can (a TCP or Unix one), as
// net/http does before closing, so that the client reads the last response rather
// than a reset.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom lets the connection's own ReadFrom (sendfile, splice) do the copy.
func (c *cappedConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// NetConn returns the connection under the cap's wrapper.
func (c *cappedConn) NetConn() net.Conn { return c.Conn }
