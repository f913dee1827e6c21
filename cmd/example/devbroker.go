//go:build devbroker

package main

import (
	"context"
	"fmt"
	"net"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

// devBroker says this build embeds a Kafka-protocol broker for KAFKA_BROKERS unset.
// Only a build with -tags devbroker (make run, make test) has it, so no production
// binary links the development broker, whatever a copy of this example forgets.
const devBroker = true

// embeddedBroker reserves a loopback port for a broker that starts with the container
// and stops after every entrypoint did, and returns its address.
func embeddedBroker(lc fx.Lifecycle, log *zap.Logger) ([]string, error) {
	// The address must be known now, for the producer and the consumer, but the
	// broker starts with the container (a Host built and never run starts
	// nothing). The port is held by a listener of ours until then and released
	// just before the broker binds it, so no other socket can take it while the
	// container is built and warmed up.
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := hold.Addr().(*net.TCPAddr).Port
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var cluster *kafkadev.Embedded
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			hold.Close()
			cluster, err = kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{
				Ports: []int{port}, Topics: map[string]int{ordersTopic: 3, deadLetters: 1}})
			if err == nil {
				log.Info("KAFKA_BROKERS is unset: running an embedded Kafka-protocol broker", zap.String("addr", addr))
			}
			return err
		},
		OnStop: func(context.Context) error { cluster.Close(); return nil },
	})
	return []string{addr}, nil
}
