package main

import (
	"os"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/rediskit"
	"github.com/servicewright/servicewright/sentrykit"
)

// telemetryConfig is the example's telemetry beyond what the Host reads itself
// (OTEL_*, SW_LOG_LEVEL, SW_LOG_FORMAT): error tracking in Sentry when SENTRY_DSN is
// set, with SENTRY_ENVIRONMENT and SENTRY_RELEASE.
func telemetryConfig() (host.TelemetryConfig, error) {
	var cfg host.TelemetryConfig
	if os.Getenv("SENTRY_DSN") == "" {
		return cfg, nil
	}
	rep, err := sentrykit.New(sentrykit.Config{})
	if err != nil {
		return cfg, err
	}
	cfg.Reporter = rep
	return cfg, nil
}

// logModule sends the log of the libraries that keep one per process (go-redis)
// through the Host's logger.
func logModule() fx.Option {
	return fx.Invoke(func(log *zap.Logger) { rediskit.UseLogger(log) })
}
