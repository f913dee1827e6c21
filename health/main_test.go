package health_test

import (
	"os"
	"testing"

	"github.com/servicewright/servicewright/internal/testenv"
)

// env holds the real Redis and PostgreSQL the integration tests run against, started
// once for the package. Run stops them after the tests and then checks for leaked
// goroutines.
var env testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, testenv.WithRedis(), testenv.WithPostgres()))
}
