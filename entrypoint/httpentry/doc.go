// Package httpentry runs an HTTP server on net/http as a servicewright entrypoint, so
// that a deploy, an autoscaler or a node going away costs nobody a request.
//
// Where to start: New(Config{Addr: ":8080"}, handler) and the Server registered with
// the Host (host.AppSpec.Entrypoints), as the package's Example shows; Config says
// every limit and its default, and the With… options add what a Config cannot hold:
// overload protection's routes, streams, middleware, an access log, a listener.
//
// # Lifecycle
//
// The Host drives a Server through the entrypoint sequence:
//
//  1. New checks the Config (timeouts, header limit, certificate files) and returns a
//     *fault.ConfigError naming every bad field. Nothing is opened.
//  2. Bind listens on Config.Addr. Connections wait in the socket's backlog.
//  3. Serve runs http.Server.Serve in a goroutine the Server owns and returns nil when
//     the Host's stop channel closes, with the listener still open. Through the drain
//     delay that follows, while load balancers notice that readiness is gone,
//     requests are served as before, but each answer carries Connection: close (on
//     HTTP/2, a GOAWAY), so that keep-alive clients move to a ready replica; this
//     starts earlier when the Host's Monitor (UseMonitor) says draining —
//     Host.BeginDraining, PreStop. Connections idle through the delay stay open
//     until Drain.
//  4. Drain hooks (optional): DrainStreams, registered as a phase, closes the
//     streams spread over a window while everything is still served.
//  5. Drain closes the Gate: from then on a request that arrives, even on a
//     keep-alive connection that is already open, is answered 503 with Retry-After,
//     Connection: close and {"code":"draining"}, a complete response the client may
//     retry elsewhere. Keep-alives are off; the connections already queued in the
//     listener's backlog are accepted and refused so before the listener closes,
//     rather than reset by the kernel; http.Server.Shutdown closes the idle
//     connections once no HTTP/1 request is left unanswered; the streams still open
//     are closed spread over the window (entrypoint.Spread). Drain follows every
//     connection's state through the server's ConnState hook and returns as soon as
//     nothing is in flight, without Shutdown's polling, so a drain that finished is
//     never reported as a timeout. On ctx expiry Drain returns and leaves the rest.
//  6. Stop calls http.Server.Close and closes every stream and hijacked connection.
//
// # Streams
//
// A stream is a long-lived request: Server-Sent Events or a WebSocket. Closing
// thousands at the same instant would send their clients to reconnect at the same
// instant, so the Server closes them one after another over StreamDrainWindow,
// oldest first. A request is a stream when its route is declared with WithStreams,
// when the stream matcher says so — by default, when it asks for text/event-stream
// or to upgrade its connection (IsStreamRequest); WithStreamMatcher changes the rule
// — and, over HTTP/1, when its answer is Content-Type: text/event-stream, whatever
// the request asked. A stream's r.Context() is the ctx the drain
// cancels, with cause entrypoint.ErrStreamDrained: an SSE handler that returns when its
// r.Context() is done is drained without change, and one that checks
// context.Cause can send a final event first. StreamContext returns that ctx.
//
// Every hijacked connection is tracked, stream or not: Hijack hands out a wrapper
// whose Close the Server sees. The connection keeps its request's place in the Gate
// until it is closed, so InFlight counts it and Drain waits for it. When the drain
// reaches it, its ctx is cancelled; if its handler called StreamContext the handler
// is trusted to close it (with a WebSocket close frame, say), otherwise the Server
// closes it. Stop closes them all.
//
// # Handlers
//
// A handler that panics is answered 500 with {"code":"internal"}, logged with its
// method and path, and counted; the server keeps serving. When the response had
// already started, the connection is aborted instead, so that the client does not
// take a truncated body for a whole one. http.ErrAbortHandler passes through.
//
// A client slow to send its request is cut by ReadHeaderTimeout and ReadTimeout
// (5 s each by default), so a slow upload neither holds a handler nor overruns a
// graceful stop; streams are not cut by them.
//
// A server span per request (trace.go) and Prometheus RED metrics, labelled by
// route, come from WithTelemetry, or from the telemetry the Host hands the Server
// (SetDefaults);
// without either the request path is the Gate, a response wrapper and a deferred
// recover.
//
// WithMiddleware wraps the handler in the user's middleware, in order, inside
// admission, the span, recovery, the metrics and the access log (middleware.go):
// a refused request never reaches it, and its panic is recovered as a handler's.
// WithRequestID gives each request an id (X-Request-Id, RequestID) and
// WithAccessLog logs a sample of the requests and every 5xx, without credentials
// or query values.
//
// # Not done
//
// The package does not route (pass an http.ServeMux, or Routes through httpfx), does
// not serve probes (the health package does), and does not speak h2c. On HTTP/2 a
// client whose stream DrainStreams ended may reconnect on the same connection until
// Drain sends its GOAWAY; that stream is then closed again by Drain's spread.
package httpentry
