package leader

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/kubekit"
	"github.com/servicewright/servicewright/lock"
)

// openKubeLock returns a kubekit.Lock in the default namespace through the
// kubeconfig at path.
func openKubeLock(path string) (*kubekit.Lock, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 200, 400 // the suite's replicas share a client: no client-side throttling
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return kubekit.NewLock(c, kubekit.LockConfig{Namespace: "default"})
}

// startKube starts a kube-apiserver for t, stopped when t ends, and writes a
// kubeconfig of an administrator for server ("" for 127.0.0.1).
func startKube(t *testing.T, opts ...testenv.KubeOption) *testenv.KubeAPIServer {
	t.Helper()
	k, err := testenv.StartKubeAPIServer(opts...)
	testenv.Require(t, err)
	t.Cleanup(func() { _ = k.Stop() })
	return k
}

func writeKubeconfig(t *testing.T, k *testenv.KubeAPIServer, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := k.WriteKubeconfig(path, server, "admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubeBackend is a kube-apiserver as a backend of the leadership suite: killing it
// kills the apiserver (its etcd keeps the Leases); restarting it starts it again.
func kubeBackend(t *testing.T) backend {
	k := startKube(t)
	path := writeKubeconfig(t, k, "")
	return backend{
		name: "kube",
		lock: func(t *testing.T) lock.Lock {
			lk, err := openKubeLock(path)
			if err != nil {
				t.Fatal(err)
			}
			return lk
		},
		kill:    k.Kill,
		restart: k.Restart,
	}
}
