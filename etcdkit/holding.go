package etcdkit

// What a holder does after Acquire (Renew, Release), and the counter a key keeps (AdvanceFence, Inspect).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/lock"
)

// Renew implements lock.Lock: one LeaseKeepAliveOnce of the holding's etcd lease. A
// lease etcd no longer has (lapsed, released) is lock.ErrNotHeld.
func (e *Lock) Renew(ctx context.Context, lease lock.Lease) error {
	if err := lockarg.Lease(lease.Key, lease.Owner, lease.TTL, lease.Token); err != nil {
		return err
	}
	sent := time.Now()
	id, err := e.find(ctx, "renew", lease)
	if err != nil {
		return err
	}
	if _, err := e.client.KeepAliveOnce(ctx, id); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			e.forget(lease)
			return fmt.Errorf("renew %q token %d: lease lapsed: %w", lease.Key, lease.Token, lock.ErrNotHeld)
		}
		return fmt.Errorf("renew %q: %w", lease.Key, err)
	}
	e.mu.Lock()
	if h, ok := e.held[lease.Key]; ok && h.id == id {
		h.until = sent.Add(lease.TTL)
		e.held[lease.Key] = h
	} else { // a holding of another Lock (or process) renewed through this one
		e.held[lease.Key] = holding{owner: lease.Owner, token: lease.Token, id: id, until: sent.Add(lease.TTL)}
	}
	e.mu.Unlock()
	return nil
}

// Release implements lock.Lock: it revokes the holding's etcd lease, which deletes
// the holder key in the same raft entry.
func (e *Lock) Release(ctx context.Context, lease lock.Lease) error {
	if err := lockarg.Lease(lease.Key, lease.Owner, lease.TTL, lease.Token); err != nil {
		return err
	}
	id, err := e.find(ctx, "release", lease)
	if err != nil {
		return err
	}
	if _, err := e.client.Revoke(ctx, id); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			e.forget(lease)
			return fmt.Errorf("release %q token %d: lease lapsed: %w", lease.Key, lease.Token, lock.ErrNotHeld)
		}
		return fmt.Errorf("release %q: %w", lease.Key, err)
	}
	e.forget(lease)
	return nil
}

// AdvanceFence implements lock.Lock: a compare-and-swap on the counter's
// ModRevision, retried while other writers move it.
func (e *Lock) AdvanceFence(ctx context.Context, key string, floor uint64) error {
	if err := lockarg.Key(key); err != nil {
		return err
	}
	if floor >= lock.MaxToken {
		return fmt.Errorf("advance %q to %d: %w", key, floor, lock.ErrFenceOutOfRange)
	}
	fk := e.fenceKey(key)
	for {
		f, err := e.readFence(ctx, key)
		switch {
		case err != nil:
			return e.wrap("advance", key, err)
		case f.value >= lock.MaxToken:
			return fmt.Errorf("advance %q: %w", key, lock.ErrFenceExhausted)
		case f.value >= floor:
			return nil
		}
		resp, err := e.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(fk), "=", f.rev)).
			Then(clientv3.OpPut(fk, strconv.FormatUint(floor, 10))).
			Commit()
		if err != nil {
			return fmt.Errorf("advance %q: %w", key, err)
		}
		if resp.Succeeded {
			return nil
		}
	}
}

func (e *Lock) readFence(ctx context.Context, key string) (fenceSeen, error) {
	resp, err := e.client.Get(ctx, e.fenceKey(key))
	if err != nil || len(resp.Kvs) == 0 {
		return fenceSeen{}, err
	}
	v, err := strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return fenceSeen{}, fmt.Errorf("counter %q is not a number", resp.Kvs[0].Value)
	}
	return fenceSeen{value: v, rev: resp.Kvs[0].ModRevision}, nil
}

// Inspect implements lock.Lock: the holder and the counter in one read, then the
// time left of the holder's etcd lease, in whole seconds rounded up.
func (e *Lock) Inspect(ctx context.Context, key string) (lock.Holder, error) {
	if err := lockarg.Key(key); err != nil {
		return lock.Holder{}, err
	}
	resp, err := e.client.Txn(ctx).Then(clientv3.OpGet(e.holderKey(key)), clientv3.OpGet(e.fenceKey(key))).Commit()
	if err != nil {
		return lock.Holder{}, e.wrap("inspect", key, err)
	}
	var h lock.Holder
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		if h.Fence, err = strconv.ParseUint(string(kvs[0].Value), 10, 64); err != nil {
			return lock.Holder{}, fmt.Errorf("inspect %q: counter %q is not a number", key, kvs[0].Value)
		}
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return h, nil
	}
	owner, token, ok := parseValue(string(kvs[0].Value))
	if !ok {
		return lock.Holder{}, fmt.Errorf("inspect %q: holder %q is not owner:token", key, kvs[0].Value)
	}
	ttl, err := e.client.TimeToLive(ctx, clientv3.LeaseID(kvs[0].Lease))
	if err != nil {
		return lock.Holder{}, fmt.Errorf("inspect %q: %w", key, err)
	}
	if ttl.TTL < 0 { // lapsed between the two reads
		return h, nil
	}
	// etcd rounds the time left down to whole seconds; report it rounded up, so that
	// a lease in its last second is not taken for free.
	h.Owner, h.Token, h.TTL = owner, token, time.Duration(min(ttl.TTL+1, ttl.GrantedTTL))*time.Second
	return h, nil
}
