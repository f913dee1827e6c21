package kubekit

// What a holder does after Acquire (Renew, Release), and the counter a key keeps (AdvanceFence, Inspect).

import (
	"context"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/lock"
)

// Renew implements lock.Lock: an update of spec.renewTime from the holder's version.
func (k *Lock) Renew(ctx context.Context, lease lock.Lease) error {
	return k.change(ctx, "renew", lease, func(l *coordinationv1.Lease) {
		now := metav1.NowMicro()
		l.Spec.RenewTime = &now
	})
}

// Release implements lock.Lock: an update that clears the holder and names the
// releaser, from the holder's version.
func (k *Lock) Release(ctx context.Context, lease lock.Lease) error {
	return k.change(ctx, "release", lease, func(l *coordinationv1.Lease) {
		l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = nil, nil, nil
		setAnnotations(l, map[string]string{annotationToken: "", annotationTTL: "", annotationReleaser: lease.Owner})
	})
}

// AdvanceFence implements lock.Lock.
func (k *Lock) AdvanceFence(ctx context.Context, key string, floor uint64) error {
	if err := lockarg.Key(key); err != nil {
		return err
	}
	if floor >= lock.MaxToken {
		return fmt.Errorf("advance %q to %d: %w", key, floor, lock.ErrFenceOutOfRange)
	}
	for {
		l, err := k.get(ctx, key)
		if err != nil {
			return k.wrap("advance", key, err)
		}
		s, err := stateOf(l)
		switch {
		case err != nil:
			return k.wrap("advance", key, err)
		case s.fence >= lock.MaxToken:
			return fmt.Errorf("advance %q: %w", key, lock.ErrFenceExhausted)
		case s.fence >= floor:
			return nil
		}
		l = l.DeepCopy()
		setAnnotations(l, map[string]string{annotationFence: strconv.FormatUint(floor, 10)})
		setExpiry(l, time.Time{}) // an advanced counter is kept
		u, err := k.leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return k.wrap("advance", key, err)
		}
		k.mu.Lock()
		if h, ok := k.held[key]; ok && h.obj.ResourceVersion == l.ResourceVersion {
			h.obj = u
			k.held[key] = h
		}
		k.mu.Unlock()
		return nil
	}
}

// Inspect implements lock.Lock. A holder whose version this Lock has seen unchanged
// for its TTL is reported lapsed (free); Holder.TTL is what is left of the TTL since
// this Lock first saw the version.
func (k *Lock) Inspect(ctx context.Context, key string) (lock.Holder, error) {
	if err := lockarg.Key(key); err != nil {
		return lock.Holder{}, err
	}
	l, err := k.leases.Get(ctx, leaseName(key), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return lock.Holder{}, nil
	}
	if err != nil {
		return lock.Holder{}, k.wrap("inspect", key, err)
	}
	s, err := stateOf(l)
	if err != nil {
		return lock.Holder{}, k.wrap("inspect", key, err)
	}
	h := lock.Holder{Fence: s.fence}
	if s.owner == "" {
		return h, nil
	}
	if left := s.ttl - k.observe(l.Name, l.ResourceVersion, s.expires); left > 0 {
		h.Owner, h.Token, h.TTL = s.owner, s.token, left
	}
	return h, nil
}
