package host

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// probeConns caps the probe listener's connections (transport.ProbeMaxConns by
// default), as the public listeners are capped, but it keeps accepting at the cap:
// a connection beyond it takes the place of an older one that is not being answered.
// A public listener pauses accept(2) at its cap instead; here that would queue the
// kubelet's probe behind every idle client in the backlog until it timed out, and a
// pod whose liveness probe times out is restarted.
//
// Which one goes: the oldest of those with nothing waiting to be read (an idle
// client, or a slow one between bytes); when there is none, the oldest of the others;
// never one whose request is being answered. Whether something waits is peeked at
// (MSG_PEEK, without blocking or consuming) at accept and again when choosing. A
// probe connects and sends its request at once and is answered from state in
// microseconds, so a flood of idle or slow clients evicts only itself, not the
// probes; only when every connection is being answered is the new one closed at once.
// Each eviction and refusal is counted.
//
// The open descriptors stay within max+1 whatever the flood. It does not limit how
// fast clients connect: the listen backlog and the kernel do.
type probeConns struct {
	max int

	mu    sync.Mutex
	order list.List // *probeConn, oldest first

	evicted atomic.Uint64 // connections closed to make room for a newer one
	refused atomic.Uint64 // new connections closed because every one was busy
}

func newProbeConns(max int) *probeConns { return &probeConns{max: max} }

// probeConn is one connection of the probe listener; busy while a request is read
// whole and answered (http.StateActive).
type probeConn struct {
	net.Conn
	pc    *probeConns
	elem  *list.Element // nil once closed
	busy  bool
	eager bool // its request was waiting when it was accepted, until it was answered
}

// listener returns ln capped.
func (pc *probeConns) listener(ln net.Listener) net.Listener { return &probeListenerCap{ln, pc} }

type probeListenerCap struct {
	net.Listener
	pc *probeConns
}

// Accept takes the next connection and, at the cap, closes the oldest that is not
// busy to make room for it, or closes it when all are busy and accepts the next.
func (l *probeListenerCap) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if conn := l.pc.admit(c); conn != nil {
			return conn, nil
		}
	}
}

// admit registers c, evicting the oldest idle connection at the cap; nil when every
// connection was busy and c was closed.
func (pc *probeConns) admit(c net.Conn) net.Conn {
	eager := requestWaiting(c)
	pc.mu.Lock()
	var victim *probeConn
	if pc.order.Len() >= pc.max {
		victim = pc.oldest(false)
		if victim == nil {
			victim = pc.oldest(true)
		}
		if victim != nil {
			pc.forget(victim)
		} else {
			pc.mu.Unlock()
			pc.refused.Add(1)
			_ = c.Close()
			return nil
		}
	}
	p := &probeConn{Conn: c, pc: pc, eager: eager}
	p.elem = pc.order.PushBack(p)
	pc.mu.Unlock()
	if victim != nil {
		pc.evicted.Add(1)
		_ = victim.Conn.Close() // its server goroutine sees the error and ends
	}
	return p
}

// oldest is the oldest connection not being answered that has a request waiting to
// be read (waiting), or that has none, or nil; mu is held. A connection is waiting
// when its request was there at accept and has not been answered yet, or when bytes
// have arrived since: a probe accepted before it could send.
func (pc *probeConns) oldest(waiting bool) *probeConn {
	for e := pc.order.Front(); e != nil; e = e.Next() {
		p := e.Value.(*probeConn)
		if p.busy {
			continue
		}
		if (p.eager || requestWaiting(p.Conn)) == waiting {
			return p
		}
	}
	return nil
}

// forget removes p from the order; mu is held.
func (pc *probeConns) forget(p *probeConn) {
	if p.elem != nil {
		pc.order.Remove(p.elem)
		p.elem = nil
	}
}

// state is the http.Server's ConnState hook: a connection whose request is being
// answered is not evicted; one that is idle again is.
func (pc *probeConns) state(c net.Conn, s http.ConnState) {
	p, ok := c.(*probeConn)
	if !ok {
		return
	}
	pc.mu.Lock()
	p.busy = s == http.StateActive
	if s == http.StateIdle {
		p.eager = false // answered: now only an idle connection
	}
	pc.mu.Unlock()
}

func (p *probeConn) Close() error {
	p.pc.mu.Lock()
	p.pc.forget(p)
	p.pc.mu.Unlock()
	return p.Conn.Close()
}

// open is the number of connections open now.
func (pc *probeConns) open() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.order.Len()
}

// collectors are servicewright_probe_connections_open and _max (gauges) and
// servicewright_probe_connections_evicted_total{reason}: "idle" (closed for a newer
// one at the cap) or "busy" (a new one closed: every connection was being answered).
func (pc *probeConns) collectors() []prometheus.Collector {
	const evicted = "servicewright_probe_connections_evicted_total"
	const help = "Probe listener connections closed at its cap: the oldest idle one for a newer (idle), or the new one when all were being answered (busy)."
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "servicewright_probe_connections_open",
			Help: "Connections open on the probe listener."}, func() float64 { return float64(pc.open()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "servicewright_probe_connections_max",
			Help: "The probe listener's connection cap."}, func() float64 { return float64(pc.max) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: evicted, Help: help, ConstLabels: prometheus.Labels{"reason": "idle"}},
			func() float64 { return float64(pc.evicted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: evicted, Help: help, ConstLabels: prometheus.Labels{"reason": "busy"}},
			func() float64 { return float64(pc.refused.Load()) }),
	}
}
