package kubefx

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/internal/testenv"
)

var (
	api    *testenv.KubeAPIServer
	apiErr error
)

// TestMain starts a kube-apiserver for the package, stops it after the tests and
// then checks for leaked goroutines.
func TestMain(m *testing.M) {
	api, apiErr = testenv.StartKubeAPIServer()
	code := m.Run()
	if api != nil {
		if err := api.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
