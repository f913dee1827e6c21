// Package kubefx wires the Kubernetes Lease lock into a Host's fx container
// (hostfx.Container). It is apart from kubekit so that a plain lock user links
// neither fx nor the Host.
package kubefx

import (
	"cmp"
	"os"
	"strings"
	"time"

	"go.uber.org/fx"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/kubekit"
	"github.com/servicewright/servicewright/lock"
)

// namespaceFile is where a pod's service account names its namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultTimeout bounds each request to the apiserver.
const defaultTimeout = 5 * time.Second

// ModuleConfig configures Module.
type ModuleConfig struct {
	// Kubeconfig is the path of a kubeconfig file, normally the KUBECONFIG
	// environment variable. Empty: the pod's service account (in-cluster).
	Kubeconfig string
	// Namespace holds the Leases, normally the POD_NAMESPACE environment variable
	// (the downward API's metadata.namespace). Empty: the service account's
	// namespace file.
	Namespace string
	// CheckName names the readiness check the module registers. Default
	// "kubernetes".
	CheckName string
	// Timeout bounds each request. Default 5s.
	Timeout time.Duration
}

// Module wires the Lease lock into a Host's fx container. It provides
// *kubekit.Lock, the same lock as lock.Lock, and a readiness check named
// cfg.CheckName ("kubernetes") that reads a Lease (see kubekit.Check).
//
// The client's configuration is read when Module is called: a kubeconfig that is
// missing or malformed is a *fault.ConfigError naming KUBECONFIG; outside a pod,
// with no kubeconfig, one naming KUBECONFIG too; a namespace that cannot be known is
// one naming POD_NAMESPACE. Nothing is sent to the apiserver until the lock is used;
// a missing RBAC permission is then an error naming the verbs and the namespace.
func Module(cfg ModuleConfig) fx.Option {
	var l fault.Problems
	var rc *rest.Config
	var err error
	if cfg.Kubeconfig != "" {
		if rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig); err != nil {
			l.Addf("KUBECONFIG", "cannot be loaded (a readable kubeconfig file is needed): %v", err)
		}
	} else if rc, err = rest.InClusterConfig(); err != nil {
		l.Addf("KUBECONFIG", "must be set outside a pod (no in-cluster service account: %v)", err)
	}
	ns := cfg.Namespace
	if ns == "" {
		if b, err := os.ReadFile(namespaceFile); err == nil {
			ns = strings.TrimSpace(string(b))
		}
	}
	if ns == "" {
		l.Addf("POD_NAMESPACE", "must be set (from the downward API's metadata.namespace) outside a pod's service account")
	}
	if err := l.Err(); err != nil {
		return fx.Error(err)
	}
	rc.Timeout = cmp.Or(cfg.Timeout, defaultTimeout)
	// client-go's default of 5 requests a second would make a renewal wait behind
	// the campaigns of the process's other leases.
	rc.QPS, rc.Burst = cmp.Or(rc.QPS, 50), cmp.Or(rc.Burst, 100)
	return fx.Module("kubefx",
		fx.Provide(
			func() (*kubekit.Lock, error) {
				c, err := kubernetes.NewForConfig(rc)
				if err != nil {
					return nil, err
				}
				return kubekit.NewLock(c, kubekit.LockConfig{Namespace: ns})
			},
			func(l *kubekit.Lock) lock.Lock { return l },
		),
		hostfx.Check(cmp.Or(cfg.CheckName, "kubernetes"), func(l *kubekit.Lock) health.Check { return kubekit.Check(l) }),
	)
}
