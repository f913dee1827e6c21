// Package kafkadev is a development and test tool: NewEmbedded starts an in-process
// Kafka-protocol cluster on loopback ports (github.com/twmb/franz-go/pkg/kfake). Any
// client speaks the real wire protocol to it, and nothing is persisted. A service may
// run on it when no broker is configured, so that `go run` works with no
// infrastructure, as the example does.
//
// It is apart from kafkakit so that a producer or consumer binary links no fake
// cluster: no production package imports it (a test enforces that).
package kafkadev
