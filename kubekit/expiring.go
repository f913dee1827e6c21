package kubekit

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/lock"
)

// AcquireExpiring implements lock.Expiring, for keys taken once and never again
// (a cron tick's lease):
//
//  1. It sweeps: it lists the namespace's Leases labelled labelExpiring and deletes
//     each whose annotationExpires has passed on this replica's clock, with the
//     resourceVersion it listed as a precondition, so that a Lease written since
//     (renewed, taken again) is left alone. It forgets what it knew of them.
//  2. It acquires key as Acquire does, and marks its Lease with labelExpiring and an
//     annotationExpires of fenceTTL from now.
//
// A deleted Lease takes its counter with it: the next acquire of the key creates a
// Lease and counts from 1 again. The expiry is judged on wall clocks, the acquirer's
// and the sweeper's, so they must agree to within fenceTTL minus the lease's ttl (a
// once-per-fleet cron job leaves a TTL of margin). The sweep needs list and delete
// on leases besides the Role's other verbs; without them AcquireExpiring fails,
// naming them.
func (k *Lock) AcquireExpiring(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (lock.Lease, error) {
	if err := lockarg.Expiring(key, owner, ttl, fenceTTL); err != nil {
		return lock.Lease{}, err
	}
	if err := k.sweep(ctx); err != nil {
		return lock.Lease{}, k.wrapSweep(key, err)
	}
	return k.acquire(ctx, key, owner, ttl, fenceTTL)
}

// sweep deletes the Leases marked labelExpiring whose expiry has passed, and
// forgets this Lock's records of keys past their expiry.
func (k *Lock) sweep(ctx context.Context) error {
	list, err := k.leases.List(ctx, metav1.ListOptions{LabelSelector: labelExpiring + "=true"})
	if err != nil {
		return err
	}
	now := time.Now()
	for i := range list.Items {
		l := &list.Items[i]
		s, err := stateOf(l)
		if err != nil || s.expires.IsZero() || now.Before(s.expires) {
			continue
		}
		rv := l.ResourceVersion
		err = k.leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	k.mu.Lock()
	for name, s := range k.seen {
		if !s.expires.IsZero() && !now.Before(s.expires) {
			delete(k.seen, name)
		}
	}
	for key, h := range k.held {
		if !h.expires.IsZero() && !now.Before(h.expires) {
			delete(k.held, key)
		}
	}
	k.mu.Unlock()
	return nil
}

// wrapSweep names the verbs a sweep needs when the apiserver refuses it.
func (k *Lock) wrapSweep(key string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("acquire %q: the client may not list or delete leases.coordination.k8s.io in namespace %q, which deleting the Leases of past keys needs (grant list and delete on leases in the Role; see package kubekit): %w", key, k.namespace, err)
	}
	return k.wrap("acquire", key, fmt.Errorf("delete expired Leases: %w", err))
}

// setExpiry marks l for deletion at expires, or, for a zero expires, keeps it.
func setExpiry(l *coordinationv1.Lease, expires time.Time) {
	if expires.IsZero() {
		delete(l.Labels, labelExpiring)
		setAnnotations(l, map[string]string{annotationExpires: ""})
		return
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[labelExpiring] = "true"
	setAnnotations(l, map[string]string{annotationExpires: expires.UTC().Format(time.RFC3339Nano)})
}
