package grpcentry

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// unknownMethod is the method label, span name and log field of a call to a method
// the server does not register: one value, whatever name the client sent, so that a
// client cannot grow the metrics by a series per name.
const unknownMethod = "unknown"

// methodSet is the full methods ("/pkg.Service/Method") the Server's grpc.Server
// registers, read once at the first stream call: grpc-go refuses registrations once
// it serves.
type methodSet struct {
	once  sync.Once
	known map[string]struct{}
}

// methodName returns full when the grpc.Server registers it, and unknownMethod
// otherwise.
func (s *Server) methodName(full string) string {
	s.methods.once.Do(func() {
		s.methods.known = make(map[string]struct{})
		for svc, info := range s.grpc.GetServiceInfo() {
			for _, m := range info.Methods {
				s.methods.known["/"+svc+"/"+m.Name] = struct{}{}
			}
		}
	})
	if _, ok := s.methods.known[full]; ok {
		return full
	}
	return unknownMethod
}

// unknownCall is the grpc.Server's UnknownServiceHandler: it answers a call to a
// method it does not register UNIMPLEMENTED, as grpc-go does, but through the
// stream interceptor, so that such calls are admitted, traced and counted (under
// unknownMethod) like any other rather than not at all. An UnknownServiceHandler
// given with WithServerOptions replaces it; its calls are counted as unknown too.
func unknownCall(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	return status.Errorf(codes.Unimplemented, "unknown method %s", method)
}
