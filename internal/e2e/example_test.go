package e2e

import (
	"time"

	"github.com/servicewright/servicewright/host"
)

// What the tests know of the example from outside, as an operator does: its topics,
// its lease key, its exit codes and budgets. cmd/example's own unit tests hold the
// example's code to the same figures (its manifests, its knobs).
const (
	ordersTopic = "orders"           // cmd/example/kafka.go
	deadLetters = "orders.dlq"       // cmd/example/kafka.go
	digestKey   = "digest-publisher" // cmd/example/digest.go: the digest lease's key

	backfillPermanentExitCode = host.ExitPermanent // `example backfill` on a permanent failure
	backfillFailAfter         = 5                  // units EXAMPLE_BACKFILL_FAIL lets through

	exampleDrainGrace  = 6 * time.Second // the service's Budgets.DrainGrace (cmd/example/main.go)
	backfillDrainGrace = 5 * time.Second // `example backfill`'s Budgets.DrainGrace
)

// order is the JSON of GET /orders/{id}: the fields the tests read.
type order struct {
	ID         string `json:"id"`
	Deliveries int    `json:"deliveries"`
}
