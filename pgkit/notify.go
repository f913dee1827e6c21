package pgkit

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/servicewright/servicewright/internal/wait"
)

// Listen keeps a connection LISTENing on channel and calls notify for each
// notification on it, until ctx is done; it returns only then. Steps: it opens a
// connection with connect, LISTENs, calls notify once (notices sent while no
// connection listened are lost, so the caller looks for work it may have missed),
// then waits for notifications. A failed connect, LISTEN or wait closes the
// connection and retries after a jittered backoff from 100ms doubling up to 5s, the
// same as the Lock's listener.
//
// notify runs on Listen's goroutine and must not block: a send on a buffered channel
// of one, dropped when full, is the usual body. Listen does not own connect's
// settings; each call must return a new connection, which Listen closes.
func Listen(ctx context.Context, connect func(context.Context) (*pgx.Conn, error), channel string, notify func()) {
	retry := wait.Backoff{Initial: listenRetryInitial, Max: listenRetryMax}
	for ctx.Err() == nil {
		conn, err := connect(ctx)
		if err == nil {
			err = syncListen(ctx, conn, map[string]string{channel: channel}, map[string]bool{})
			if err != nil {
				closeConn(conn)
			}
		}
		if err != nil {
			wait.SleepCtx(ctx, retry.Next())
			continue
		}
		retry.Reset()
		notify()
		for ctx.Err() == nil {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				break
			}
			if n.Channel == channel {
				notify()
			}
		}
		closeConn(conn)
	}
}
