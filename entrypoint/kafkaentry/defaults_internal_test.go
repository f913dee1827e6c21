package kafkaentry

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// kafka-go's "no messages received … within the allocated time", one line per idle
// fetch, does not reach the logger; its other lines do.
func TestKafkaNoiseIsDropped(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	l := zapLogger(zap.New(core), zapcore.DebugLevel)
	l.Printf("no messages received from kafka within the allocated time for partition %d of %s at offset %d: %v", 0, "orders", 42, "[7] Request Timed Out")
	l.Printf("initializing kafka reader for partition %d of %s starting at offset %d", 0, "orders", 42)
	if logs.Len() != 1 || !logs.All()[0].Entry.Level.Enabled(zapcore.DebugLevel) ||
		logs.FilterMessageSnippet("allocated time").Len() != 0 {
		t.Errorf("logged %v, want only the reader's initialization", logs.All())
	}
}
