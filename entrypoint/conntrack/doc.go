// Package conntrack follows the connections of a hand-written network entrypoint
// (a line protocol behind a load balancer, say) so that its drain drops nothing:
// every request a client sent is answered, the connections the kernel had queued
// are served rather than reset, and idle connections are told goodbye and closed
// a few at a time.
//
// # Use
//
// Make a Tracker with New, wrap the listener Bind opened with Tracker.Listener,
// and serve each connection Accept returns (a *Conn). A connection is busy from
// its accept until the entrypoint calls Conn.Idle after answering a request; the
// bytes of the next request make it busy again inside Read, before the entrypoint
// sees them. The entrypoint's Drain calls Tracker.Drain, its Stop Tracker.Close,
// and its DrainReport Tracker.Report.
//
// # The drain
//
// Tracker.Drain, in order:
//
//  1. From now on a connection going idle is closed at once, after its answer:
//     Conn.Idle writes Config.Goodbye, half-closes, reads what is left without
//     waiting (so that the close is a FIN, not a reset) and closes.
//  2. DrainBacklog: the connections the kernel completed and queued are accepted
//     without waiting and handed to the accept loop, which serves them as any
//     other; then the socket is closed and Accept returns an error wrapping
//     net.ErrClosed, which ends the accept loop as a Close would. Closing a
//     listening socket instead would reset each of them. This needs a
//     *net.TCPListener or *net.UnixListener, on Linux; any other listener is
//     closed at once. A connection taken from the queue
//     may read for Config.BacklogReadTimeout only (1 s by default), so that slow
//     clients queued at the connection cap cannot hold the drain for the
//     entrypoint's header timeout once per cap's worth of them.
//  3. The idle connections are sent the goodbye and closed, oldest first, spread
//     over Config.IdleCloseWindow with entrypoint.Spread, so that their clients
//     reconnect to the other replicas gradually.
//  4. It waits, without polling (an entrypoint.Gate), for the queue to be taken and
//     for every busy connection to answer and close.
//
// Until the first Drain, Wait or WaitSerial, a connection's moves between busy and
// idle touch only the connection (an atomic swap of its state): the Tracker's
// Gates count the busy connections from then on, so that serving costs nothing
// shared between connections.
//
// On the drain's deadline it says how many connections are still busy and leaves
// them to Close. The counts (closed idle, closed after their answer, backlog
// answered, late input, busy at the deadline, the cap) are in Stats and Report.
//
// # Limits
//
// Config.MaxConns caps the connections open at once, as httpentry and grpcentry
// do: at the cap the listener stops accepting and new connections wait in the
// listen backlog. A new connection that never sends anything stays busy until the
// entrypoint's own read deadline closes it, so set one. Input that arrives on an
// idle connection in the instant the drain decided to close it is not handed on:
// its client gets the goodbye and may retry (counted as late input).
//
// # Protocols with their own machinery
//
// An entrypoint that closes idle connections its own way (net/http does) uses the
// parts: Tracker.DrainBacklog, Tracker.Wait, Conn.Busy and Conn.Idle from its
// connection-state hook, Conn.Multiplexed for a connection carrying many requests
// at once (HTTP/2; Tracker.WaitSerial ignores those), Conn.Detach for a hijacked
// one. httpentry is built so.
package conntrack
