// Package telemetry is the plumbing under the Host's telemetry: its own logger on
// stderr (NewLogger: level and encoding from SW_LOG_LEVEL and SW_LOG_FORMAT, the
// console encoding for a person, durations in seconds in JSON) written through a
// Sink that never blocks on a stalled reader, and what the standard OpenTelemetry
// variables ask for (FromEnv: the resource, the propagators, the exporters). The Host
// decides what to build from them and when to flush; this package only builds.
package telemetry
