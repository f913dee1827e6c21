// Package transport holds what the network entrypoints (httpentry, grpcentry) share,
// so that each is written once: the options both take (Options: WithListener,
// WithTelemetry), the key pair of Config.CertFile and Config.KeyFile,
// the defaulting of their duration and size fields and the Addr/WithListener rule,
// their RED metrics registered all or none, the listening socket Bind opens and Stop
// closes, the serving goroutine with the rule for the Host giving up on Serve
// (Serving), the set of streams that Drain ends oldest first, the admission metrics
// (Shed), and the tracer, propagator and start options of their server spans
// (Tracing) with how a panic marks one (SpanPanicked).
package transport
