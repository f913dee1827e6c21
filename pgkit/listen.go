package pgkit

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/internal/wait"
)

// listenPoll is how long the listener waits for a notification before it checks
// whether the set of watched keys changed. The wait sends nothing to the server.
const listenPoll = 250 * time.Millisecond

// The wait between attempts to reconnect the listener: a jittered backoff from
// listenRetryInitial, doubling up to listenRetryMax.
const (
	listenRetryInitial = 100 * time.Millisecond
	listenRetryMax     = 5 * time.Second
)

// listener is the goroutine that LISTENs for every watch of a Lock.
type listener struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// WatchReleases implements lock.Notifier. Every watch of a Lock shares one
// connection that LISTENs on the channels of the watched keys; it is opened by a
// goroutine the Lock starts at the first watch and stops with the last (or Close).
// A new watch is in place within 250ms; notices sent while the connection is
// down (a restart) are lost, which the watcher's polling covers.
func (l *Lock) WatchReleases(_ context.Context, key, self string) (<-chan struct{}, func(), error) {
	if err := lockarg.Key(key); err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil, nil, errClosed
	}
	l.watch.Lock()
	defer l.watch.Unlock()
	notices, remove, _ := l.hub.Add(key, self)
	if l.listener == nil {
		ctx, cancel := context.WithCancel(context.Background())
		ln := &listener{cancel: cancel, done: make(chan struct{})}
		l.listener = ln
		go l.listen(ctx, ln.done)
	}
	stop := func() {
		l.watch.Lock()
		defer l.watch.Unlock()
		if remove() && l.hub.Len() == 0 {
			l.stopListenerLocked()
		}
	}
	return notices, stop, nil
}

func (l *Lock) stopListener() {
	l.watch.Lock()
	defer l.watch.Unlock()
	l.stopListenerLocked()
}

// stopListenerLocked stops the listener and waits for it. l.watch is held.
func (l *Lock) stopListenerLocked() {
	if l.listener == nil {
		return
	}
	l.listener.cancel()
	<-l.listener.done
	l.listener = nil
}

// listen keeps a LISTEN connection for the watched keys and passes each
// notification to their watchers, until ctx is done.
func (l *Lock) listen(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	var (
		conn      *pgx.Conn
		listening = map[string]bool{}
		retry     = wait.Backoff{Initial: listenRetryInitial, Max: listenRetryMax}
	)
	defer func() {
		if conn != nil {
			closeConn(conn)
		}
	}()
	for ctx.Err() == nil {
		if conn == nil || conn.IsClosed() {
			c, err := l.open(ctx)
			if err != nil {
				wait.SleepCtx(ctx, retry.Next())
				continue
			}
			conn, listening = c, map[string]bool{}
			retry.Reset()
		}
		keys := map[string]string{} // channel → key
		for _, k := range l.hub.Keys() {
			keys[channel(keyHash(k))] = k
		}
		if err := syncListen(ctx, conn, keys, listening); err != nil {
			closeConn(conn)
			conn = nil
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, listenPoll)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if k, ok := keys[n.Channel]; ok {
				l.hub.Notify(k, n.Payload)
			}
		case conn.IsClosed():
			conn = nil
		}
	}
}

// syncListen LISTENs on the channels of want that are not listened to yet and UNLISTENs
// those no longer wanted.
func syncListen(ctx context.Context, c *pgx.Conn, want map[string]string, listening map[string]bool) error {
	for ch := range want {
		if !listening[ch] {
			if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				return err
			}
			listening[ch] = true
		}
	}
	for ch := range listening {
		if _, ok := want[ch]; !ok {
			if _, err := c.Exec(ctx, "UNLISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				return err
			}
			delete(listening, ch)
		}
	}
	return nil
}
