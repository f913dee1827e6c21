package transport

import (
	"net"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
)

// Options is what the options of both transports share, embedded in each package's
// options: the listener of WithListener, the telemetry of WithTelemetry, and the
// problems an option found, which New reports with Config's.
type Options struct {
	Listener net.Listener         // WithListener's; nil: Bind listens on Config.Addr
	Given    entrypoint.Telemetry // WithTelemetry's; SetDefaults takes the Host's for the rest
	Problems fault.Problems
}

// UseListener is WithListener: Bind takes l instead of listening on Config.Addr
// (Addr checks that Addr is then empty). A nil l is a problem.
func (o *Options) UseListener(l net.Listener) {
	if l == nil {
		o.Problems.Addf("WithListener", "listener must not be nil")
	}
	o.Listener = l
}

// UseTelemetry is WithTelemetry: t's non-nil fields win over what an earlier call
// gave.
func (o *Options) UseTelemetry(t entrypoint.Telemetry) { o.Given = t.Or(o.Given) }
