package main

import (
	"net"
	"strconv"

	"github.com/servicewright/servicewright/fault"
)

// addrs are the example's listen addresses, each from its variable or its default.
type addrs struct {
	httpAddr  string // HTTP_ADDR, default ":8080": the orders API over HTTP
	grpcAddr  string // GRPC_ADDR, default ":9090": the orders API over gRPC
	probeAddr string // PROBE_ADDR, default ":8079": probes, /metrics, /debug/lifecycle
}

// readAddrs reads the listen addresses and records in l every one that is not
// host:port with a numeric port from 0 to 65535, naming the variable and the field
// it sets, so that a typo is exit 78 naming HTTP_ADDR rather than a failed bind at
// startup (exit 1) that names neither. It does not try the addresses: a port in use
// is a startup failure, not a configuration error.
func readAddrs(l *fault.Problems) addrs {
	a := addrs{httpAddr: envOr("HTTP_ADDR", ":8080"), grpcAddr: envOr("GRPC_ADDR", ":9090"),
		probeAddr: envOr("PROBE_ADDR", ":8079")}
	for _, v := range []struct{ variable, field, addr string }{
		{"HTTP_ADDR", "httpentry.Config.Addr", a.httpAddr},
		{"GRPC_ADDR", "grpcentry.Config.Addr", a.grpcAddr},
		{"PROBE_ADDR", "Probes.Addr", a.probeAddr},
	} {
		if reason := checkAddr(v.addr); reason != "" {
			l.AddEnvf(v.field, v.variable, "%s", reason)
		}
	}
	return a
}

// checkAddr says what is wrong with a listen address, or "" when nothing is. Only
// what os.Getenv returned is quoted: a listen address holds no secret.
func checkAddr(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "must be host:port or :port, got " + strconv.Quote(addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "port must be a number from 0 to 65535, got " + strconv.Quote(port)
	}
	return ""
}
