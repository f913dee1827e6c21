package kafkadev_test

import (
	"fmt"

	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

// A cluster for development and tests, in the process, on loopback ports: give
// its Brokers to a kafkaentry.Config or a kafkakit.ProducerConfig. Build it into a
// development binary only (the example does so behind the devbroker build tag).
func ExampleNewEmbedded() {
	dev, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Brokers: 3, Topics: map[string]int{"orders": 6}})
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	fmt.Println(len(dev.Brokers()), "brokers")
	// Output: 3 brokers
}
