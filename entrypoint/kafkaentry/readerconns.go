package kafkaentry

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/segmentio/kafka-go"
)

// errReadersCut is what a partition reader's dial returns once Stop cut the readers.
var errReadersCut = errors.New("kafkaentry: partition readers stopped")

// readerConns holds the connections of the partition readers, so that Stop can cut a
// fetch in progress: kafka-go's Reader.Close waits for it, up to MaxWait (issue
// #428), and Stop waits for every reader's Close. By the time Stop cuts them, every
// offset handled is committed (Drain's commit, or Stop's own) and intake has ended, so
// a cut fetch only gives back messages nobody took, which the partition's next owner
// fetches again. The zero value is ready to use.
type readerConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cut   bool
}

// dialer returns a copy of base whose connections are held until they close.
func (rc *readerConns) dialer(base *kafka.Dialer) *kafka.Dialer {
	d := *base
	dial := base.DialFunc
	if dial == nil {
		// What kafka-go itself dials with when DialFunc is nil.
		dial = (&net.Dialer{LocalAddr: base.LocalAddr, FallbackDelay: base.FallbackDelay,
			KeepAlive: base.KeepAlive}).DialContext
	}
	d.DialFunc = func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.cut {
			_ = conn.Close()
			return nil, errReadersCut
		}
		if rc.conns == nil {
			rc.conns = map[net.Conn]struct{}{}
		}
		rc.conns[conn] = struct{}{}
		return &heldConn{Conn: conn, rc: rc}, nil
	}
	return &d
}

// isCut reports whether Stop cut the readers: their errors from then on are the cut's.
func (rc *readerConns) isCut() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.cut
}

// cutAll closes every reader connection, and refuses those dialed later.
func (rc *readerConns) cutAll() {
	rc.mu.Lock()
	rc.cut = true
	conns := rc.conns
	rc.conns = nil
	rc.mu.Unlock()
	for conn := range conns {
		_ = conn.Close()
	}
}

// heldConn leaves readerConns when it closes.
type heldConn struct {
	net.Conn
	rc *readerConns
}

func (c *heldConn) Close() error {
	c.rc.mu.Lock()
	delete(c.rc.conns, c.Conn)
	c.rc.mu.Unlock()
	return c.Conn.Close()
}
