//go:build !devbroker

package main

import (
	"errors"

	"go.uber.org/fx"
	"go.uber.org/zap"
)

// devBroker is false in a production build: KAFKA_BROKERS must be set, and
// readBrokers says so at build time (exit 78) before this is ever reached.
const devBroker = false

func embeddedBroker(fx.Lifecycle, *zap.Logger) ([]string, error) {
	return nil, errors.New("KAFKA_BROKERS is unset and this binary has no development broker")
}
