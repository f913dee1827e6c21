package grpcentry

import "github.com/servicewright/servicewright/health"

var _ health.MonitorUser = (*Server)(nil)

// UseMonitor ties the health service to m, the Host's readiness and checks, unless
// WithHealth gave a Monitor of its own: from Serve it answers SERVING only while m's
// verdict is ok, and NOT_SERVING from the moment readiness is withdrawn (the stop,
// or Host.BeginDraining) and while a check fails. The Host calls it at registration.
// A nil m, or a call once the Server is bound, does nothing.
func (s *Server) UseMonitor(m *health.Monitor) {
	s.base.Lock()
	defer s.base.Unlock()
	if m == nil || s.own.monitor != nil || !s.base.Unbound() {
		return
	}
	s.monitor = m
}
