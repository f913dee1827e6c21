package pgkit

import (
	"net"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// Backend names the server cfg points at, as "postgres host:port", for a log line or
// a host.Step's Backend: what a step waits on when the server does not answer. It
// never carries the user, the password or the connection options.
func Backend(cfg *pgx.ConnConfig) string {
	return "postgres " + net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}
