// Package grpcentry runs a gRPC server on google.golang.org/grpc as a servicewright
// entrypoint, so that a deploy, an autoscaler or a node going away costs no client an
// RPC, and no stream or health watch holds the process past its budget.
//
//	srv, err := grpcentry.New(grpcentry.Config{Addr: ":9090"}, func(g *grpc.Server) {
//		ordersv1.RegisterOrdersServer(g, api)
//		reflection.Register(g)
//	}, grpcentry.WithHealth(monitor),
//		grpcentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
//
// # What happens on SIGTERM, in order
//
//  1. The Host withdraws readiness. With WithHealth, the grpc.health.v1 service
//     answers NOT_SERVING at once (Check, and a message on every Watch stream), so
//     clients that health-check (grpc-go's client-side health checking with round
//     robin, Envoy, a proxy's gRPC check) stop sending new RPCs here. RPCs are still
//     served normally: Serve has returned, the listener is open.
//  2. The drain delay passes with everything served, while those clients move.
//  3. Drain: the health service stays NOT_SERVING and every Health/Watch stream is
//     ended with UNAVAILABLE (an idle watch would otherwise hold GracefulStop for the
//     whole grace); the Gate closes, so an RPC that still arrives, on a new or an
//     open connection, is answered UNAVAILABLE, which a client may retry elsewhere;
//     grpc.Server.GracefulStop starts on its own goroutine (the listener closes, every
//     connection gets a GOAWAY); the streaming RPCs still open are closed one after
//     another over min(StreamDrainWindow, the time left), each ending with
//     UNAVAILABLE "grpc server is draining: reconnect"; Drain returns when the
//     admitted unary RPCs have finished and GracefulStop has returned.
//  4. If the grace runs out first, Drain returns the deadline and Stop follows:
//     grpc.Server.Stop, also on its own goroutine, closes every connection (the
//     clients of what was still running get UNAVAILABLE). A handler that blocks
//     forever, ignoring its ctx, is left running: neither Drain nor Stop waits for it
//     past its ctx, so it never keeps the process past its budget.
//
// # Handlers
//
// A handler that panics is answered INTERNAL, logged with its method and stack, and
// counted (Stats, servicewright_grpc_panics_total); the server keeps serving. A
// streaming handler's ctx is the one the drain cancels, with cause
// entrypoint.ErrStreamDrained: a handler that returns when its ctx is done is drained
// without change, and its result becomes UNAVAILABLE unless it returned a status of
// its own.
//
// Tracing (a server span per admitted RPC, started by the Server's interceptor, only
// through the tracer provider given) and Prometheus RED metrics (servicewright_grpc_*)
// use what WithTelemetry gives, or else what the Host hands
// over (SetDefaults). A call to a method the server does not register is answered
// UNIMPLEMENTED, as grpc-go does, but through the interceptor: it is traced and
// counted under the method "unknown", one series whatever names clients send.
// The safe defaults bound message
// sizes (4 MiB each way), enforce a minimum client keepalive interval, close idle
// connections, and age connections (MaxConnectionAge, 5 min) so that clients
// rebalance onto replicas that started later. CertFile and KeyFile turn on TLS.
//
// # Bounded like net/http
//
// A public gRPC port is bounded as httpentry's HTTP port is: an RPC's metadata to
// MaxMetadataBytes (1 MiB, as httpentry's MaxHeaderBytes; grpc-go's own default is 16
// MiB), the RPCs open at once on a connection to MaxConcurrentStreams (100), the
// connections to MaxConnections (a quarter of the open-file limit: at the cap the
// server stops accepting), and the streams a client may reset (RST_STREAM) to a
// bucket of MaxStreamResets refilled at StreamResetRate a second. A connection that
// resets more — an HTTP/2 "rapid reset" flood, which grpc-go slows by not reading
// while MaxConcurrentStreams handlers run but never cuts off — is sent a GOAWAY with
// ENHANCE_YOUR_CALM and closed, logged with its address and counted; for a minute,
// a new connection from its IP starts with a smaller bucket. The reset guard
// is the server's transport credentials, wrapped around TLS when there is a key pair:
// a grpc.Creds given with WithServerOptions replaces it, and with it the guard.
//
// At the drain, once the admitted RPCs have ended, the connections still open get
// a second to close after their GOAWAY; those that do not (a client that
// ignores the GOAWAY, or keeps opening streams) are closed, and counted in the drain
// report (connections_cut), rather than holding the drain for its whole grace.
//
// # Not done
//
// The package does not retry for the client, does not register server reflection
// (do it in the register function) and does not serve the HTTP probes (the health
// package does). The health service answers for the whole server ("") and each
// registered service with one verdict; it does not keep per-service statuses.
package grpcentry
