package transport

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers every collector with reg, all or none: on the first failure it
// unregisters those it registered and returns the error.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, d := range cs[:i] {
				reg.Unregister(d)
			}
			return err
		}
	}
	return nil
}

// AlreadyRegistered tells whether err is the registry's complaint about a name
// already taken, so that the caller can word its configuration error.
func AlreadyRegistered(err error) bool {
	_, ok := errors.AsType[prometheus.AlreadyRegisteredError](err)
	return ok
}
