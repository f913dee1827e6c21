// Package kafkakit holds what a service needs around Kafka besides consuming: a
// bounded producer, a readiness check of the brokers, the trace-context carrier of
// message headers. The embedded Kafka-protocol broker for local development and
// tests is in kafkakit/kafkadev, so that no production binary links it.
//
// It is apart from the consumer (entrypoint/kafkaentry) so that a service that only
// publishes — an HTTP API that produces orders — links the producer and not the
// consumer group; the consumer uses the producer for its dead-letter topic.
//
//   - NewProducer makes a Producer: a kafka-go writer with safe defaults whose every
//     write is bounded by ProducerConfig.WriteTimeout (default 3s), even where
//     kafka-go itself would not honour its ctx, and which injects the caller's trace
//     context into each message's headers (W3C trace context by default).
//   - Check returns a readiness check that dials the brokers.
//   - HeaderCarrier adapts message headers to OpenTelemetry propagation.
package kafkakit
