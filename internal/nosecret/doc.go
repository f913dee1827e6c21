// Package nosecret holds FuzzNoSecret, the proof that no value which may carry a
// credential reaches an output: every parser of such a value in the module (REDIS_URL,
// DATABASE_URL, KAFKA_BROKERS, SENTRY_DSN, the OTEL_EXPORTER_OTLP_* header lists and
// endpoints) and OpenTelemetry's diagnostics as the Host installs them. The package
// has no code of its own; `make test` fuzzes it briefly, and every run replays the
// committed corpus in testdata/fuzz.
package nosecret
