package etcdkit

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/internal/testenv"
)

// cluster is the package's 3-member etcd, started once by TestMain; clusterErr is
// why it could not be, reported by each test that needs it.
var (
	cluster    *testenv.Etcd
	clusterErr error
)

func TestMain(m *testing.M) {
	cluster, clusterErr = testenv.StartEtcd(3)
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

func etcd(t testing.TB) *testenv.Etcd {
	t.Helper()
	testenv.Require(t, clusterErr)
	return cluster
}
