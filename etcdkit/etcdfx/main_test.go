package etcdfx

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/internal/testenv"
)

var (
	cluster    *testenv.Etcd
	clusterErr error
)

// TestMain starts a one-member etcd for the package, stops it after the tests and
// then checks for leaked goroutines.
func TestMain(m *testing.M) {
	cluster, clusterErr = testenv.StartEtcd(1)
	code := m.Run()
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
