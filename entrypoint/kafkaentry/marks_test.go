package kafkaentry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fleet"
)

func TestMarks(t *testing.T) {
	c, err := kafkaentry.New(kafkaentry.Config{Brokers: []string{"127.0.0.1:9092"}, GroupID: "g", Topics: []string{"t"}},
		func(context.Context, kafka.Message) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !c.Marks().RequiresLongRunning {
		t.Error("the consumer does not declare RequiresLongRunning")
	}
	if fleet.Serverless.Check(c.Marks()) == "" {
		t.Error("the Serverless profile accepts the consumer")
	}
}

func TestBrokerCredentialsNotEchoed(t *testing.T) {
	_, err := kafkaentry.New(kafkaentry.Config{Brokers: []string{"svc:hunter2@kafka.internal"}, GroupID: "g", Topics: []string{"t"}},
		func(context.Context, kafka.Message) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "Brokers[0]") {
		t.Fatalf("New with a malformed broker entry: %v, want a ConfigError naming Brokers[0]", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the config error %q echoes the entry's password", err)
	}
}
