// Package sentrykit reports errors to Sentry: a fault.Reporter on the Sentry Go SDK,
// the only package of the module that links it.
//
// Give it to the Host and it receives what the Host sees fail — a startup failure,
// an essential entrypoint's failure, a recovered panic with its stack — tagged with
// the service, the instance, the entrypoint, the stage and the trace id, and it is
// flushed in the Host's flush stage:
//
//	rep, err := sentrykit.New(sentrykit.Config{}) // SENTRY_DSN, SENTRY_ENVIRONMENT, SENTRY_RELEASE
//	if err != nil { … }
//	spec.Telemetry.Reporter = rep
//
// The DSN carries a key: it is never logged, and no error of this package prints it.
package sentrykit
