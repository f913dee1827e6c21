package fleet_test

import (
	"os"
	"testing"

	"github.com/servicewright/servicewright/internal/testenv"
)

var env testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, testenv.WithRedis()))
}
