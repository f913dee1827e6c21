package outbox_test

import (
	"os"
	"testing"

	"github.com/servicewright/servicewright/internal/testenv"
)

var env testenv.Env

// TestMain starts a PostgreSQL for the package; testenv.Run stops it and then checks
// for leaked goroutines, as goleak.VerifyTestMain would.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, testenv.WithPostgres()))
}
