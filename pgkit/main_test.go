package pgkit

import (
	"os"
	"testing"

	"github.com/servicewright/servicewright/internal/testenv"
)

var env testenv.Env

// TestMain starts the package's services once; testenv.Run stops them and then
// checks for leaked goroutines with goleak.Find, as goleak.VerifyTestMain would.
func TestMain(m *testing.M) {
	if dsn := os.Getenv(waitHelperEnv); dsn != "" { // the killed holder of TestAcquireWait
		os.Exit(waitHelper(dsn))
	}
	os.Exit(testenv.Run(m, &env, testenv.WithPostgres()))
}
