package health

// MonitorUser is implemented by entrypoints that follow readiness in a transport of
// their own (the gRPC health service, a service registry) and take the Host's
// Monitor unless they were given one.
//
// The Host builds one Monitor over its own readiness and its checks — the answers
// of its readiness probe — and calls UseMonitor once on each entrypoint that
// implements it, when the entrypoint is registered (before Bind). An implementation
// keeps a Monitor given at construction (grpcentry.WithHealth, say) and ignores m
// then; UseMonitor after Bind does nothing.
type MonitorUser interface {
	UseMonitor(m *Monitor)
}
