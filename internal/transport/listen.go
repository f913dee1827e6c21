package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Listen returns ln when the user gave one, and otherwise opens a TCP listener on
// addr, honouring ctx while it does. A failure is returned prefixed with name, e.g.
// "http: listen tcp 127.0.0.1:8080: bind: address already in use".
func Listen(ctx context.Context, ln net.Listener, addr, name string) (net.Listener, error) {
	if ln != nil {
		return ln, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return ln, nil
}

// CloseListener closes ln; one closed already is not an error. A failure is returned
// prefixed with name.
func CloseListener(ln net.Listener, name string) error {
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("%s: close listener: %w", name, err)
	}
	return nil
}
