package testenv

import (
	"os"
	"testing"
)

var env Env

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		// A helper process started by a test: it manages its own servers.
		os.Exit(m.Run())
	}
	os.Exit(Run(m, &env, WithRedis(), WithPostgres()))
}
