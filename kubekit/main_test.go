package kubekit

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/internal/testenv"
)

// api is the package's kube-apiserver (on an etcd of its own), started once by
// TestMain; apiErr is why it could not be, reported by each test that needs it.
var (
	api    *testenv.KubeAPIServer
	apiErr error
)

func TestMain(m *testing.M) {
	api, apiErr = testenv.StartKubeAPIServer()
	code := m.Run()
	if api != nil {
		if err := api.Stop(); err != nil {
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
