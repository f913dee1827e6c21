// Package kubekit holds a lock.Lock on Kubernetes Leases (coordination.k8s.io/v1),
// beside client-go so that the core packages link no Kubernetes client. Package
// kubekit/kubefx wires it into a Host's fx container.
//
// Choose it when the fleet runs on Kubernetes and should need no other engine for
// leadership: a graceful hand-over takes one round trip (the release clears the
// holder and a watch wakes the other replicas), tokens fence stale writers, and a
// stale writer's update is refused by the apiserver (409 Conflict). A crashed
// leader's Lease passes after its TTL (the apiserver never expires a Lease; the
// candidates judge it on their own clocks).
//
// The service account needs a Role in its namespace:
//
//	apiVersion: rbac.authorization.k8s.io/v1
//	kind: Role
//	metadata: {name: servicewright-leases}
//	rules:
//	- apiGroups: [coordination.k8s.io]
//	  resources: [leases]
//	  verbs: [get, create, update, watch, list, delete]
//
// bound to it by a RoleBinding (testdata/k8s has both). Without it every call is
// refused, and the error names the verbs and the namespace. list and delete serve
// AcquireExpiring alone (once-per-fleet cron jobs): it deletes the Leases of past
// ticks, which would otherwise pile up one per tick.
package kubekit
