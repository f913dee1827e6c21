package etcdkit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/internal/wake"
	"github.com/servicewright/servicewright/lock"
)

var (
	_ lock.Lock         = (*Lock)(nil)
	_ lock.Notifier     = (*Lock)(nil)
	_ lock.ReleaseBound = (*Lock)(nil)
	_ lock.Expiring     = (*Lock)(nil)
)

// defaultKeyPrefix starts the name of every etcd key a Lock writes.
const defaultKeyPrefix = "servicewright/lock/"

// Lock is a lock.Lock on etcd through a go.etcd.io/etcd/client/v3 client. For a
// lock named key it keeps two etcd keys: PREFIX+key+"/holder", whose value is
// "owner:token" and which is attached to an etcd lease, and PREFIX+key+"/fence", the
// fencing counter, attached to nothing.
//
//   - Acquire first makes sure the campaigner's etcd lease runs a full TTL from now
//     (a LeaseKeepAliveOnce of the lease its last failed attempt kept, or a
//     LeaseGrant), then, in one transaction, checks that the holder key is absent
//     and the counter unchanged since it was read, writes counter+1 to the counter
//     and "owner:counter+1" to the holder under that lease. A counter that moved
//     meanwhile is read again from the transaction's reply and the transaction
//     retried.
//   - Renew is a LeaseKeepAliveOnce of the holding's lease, sent on our schedule
//     (the Leadership's RenewEvery), not a background keep-alive stream: the lease
//     runs from each renewal's arrival, so no earlier than its send.
//   - Release revokes the holding's lease, which deletes the holder key; a lease
//     that lapsed or was replaced is gone, and Release and Renew return
//     lock.ErrNotHeld.
//   - WatchReleases (lock.Notifier) watches the holder key for deletes: a release,
//     and also a lapse, wakes the other campaigners at once.
//
// etcd leases are whole seconds: a ttl is rounded up to the next second, and etcd
// raises a TTL below its minimum (1.5 election timeouts) to that minimum, so a
// lease may last longer than asked, never shorter. etcd counts a lease from when the
// grant or keep-alive reached its raft leader, and a new raft leader renews every
// lease in full: both only delay the release (EarliestRelease is ttl). A crashed
// holder's lease is held until it lapses.
//
// The counter is a key of its own, never deleted by the lock — unless the key was
// taken with AcquireExpiring (lock.Expiring): the counter is then written under an
// etcd lease of its own, of fenceTTL, and etcd deletes it when that lapses. Its ModRevision, not
// its value, is what the acquire's transaction compares, and the value is what
// AdvanceFence raises. An etcd cluster restored from an old snapshot repeats
// tokens; AdvanceFence (the Leadership's FenceFloor) moves the counter past them.
type Lock struct {
	client *clientv3.Client
	prefix string

	mu    sync.Mutex
	held  map[string]holding   // by key
	spare map[spareKey]spare   // a campaigner's lease, kept across failed attempts
	fence map[string]fenceSeen // the counter as last read, of keys held or spared

	watch   sync.Mutex // guards watches
	hub     wake.Hub
	watches map[string]func() // by key: stops the key's watch and waits for it
}

type holding struct {
	owner string
	token uint64
	id    clientv3.LeaseID
	until time.Time // etcd has revoked the lease by then unless renewed
}

type spare struct {
	id    clientv3.LeaseID
	until time.Time
}

type spareKey struct {
	key, owner string
	secs       int64
}

type fenceSeen struct {
	value uint64
	rev   int64 // ModRevision; 0: the counter key does not exist
}

// LockConfig configures a Lock. The zero value takes the defaults.
type LockConfig struct {
	// KeyPrefix starts every key the lock writes. Default "servicewright/lock/".
	KeyPrefix string
}

// resolve fills in the default KeyPrefix. No field can be wrong, so it records
// nothing in l (taken for the module's one Config shape).
func (cfg LockConfig) resolve(*fault.Problems) LockConfig {
	cfg.KeyPrefix = cmp.Or(cfg.KeyPrefix, defaultKeyPrefix)
	return cfg
}

// NewLock returns a Lock using client. It validates its arguments into a
// *fault.ConfigError naming each field, and sends nothing to etcd.
func NewLock(client *clientv3.Client, cfg LockConfig) (*Lock, error) {
	var l fault.Problems
	if client == nil {
		l.Addf("client", "must not be nil")
	}
	cfg = cfg.resolve(&l)
	if err := l.Err(); err != nil {
		return nil, err
	}
	return &Lock{
		client:  client,
		prefix:  cfg.KeyPrefix,
		held:    map[string]holding{},
		spare:   map[spareKey]spare{},
		fence:   map[string]fenceSeen{},
		watches: map[string]func(){},
	}, nil
}

func (e *Lock) holderKey(key string) string { return e.prefix + key + "/holder" }
func (e *Lock) fenceKey(key string) string  { return e.prefix + key + "/fence" }

func value(owner string, token uint64) string { return owner + ":" + strconv.FormatUint(token, 10) }

// parseValue splits a holder value "owner:token".
func parseValue(v string) (owner string, token uint64, ok bool) {
	i := strings.LastIndexByte(v, ':')
	if i < 0 {
		return "", 0, false
	}
	t, err := strconv.ParseUint(v[i+1:], 10, 64)
	return v[:i], t, err == nil
}

// wrap adds to an error of op on key, when etcd did not answer in time or could not
// be reached, which endpoints were tried (host:port only: a URL may carry a
// password).
func (e *Lock) wrap(op, key string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.Unavailable || status.Code(err) == codes.DeadlineExceeded {
		var hosts []string
		for _, ep := range e.client.Endpoints() {
			if u, perr := url.Parse(ep); perr == nil && u.Host != "" {
				hosts = append(hosts, u.Host)
			}
		}
		return fmt.Errorf("%s %q: etcd unreachable at %s: %w", op, key, strings.Join(hosts, ","), err)
	}
	return fmt.Errorf("%s %q: %w", op, key, err)
}

// seconds is ttl in whole seconds, rounded up, as etcd leases take it.
func seconds(ttl time.Duration) int64 { return int64((ttl + time.Second - 1) / time.Second) }

// EarliestRelease implements lock.ReleaseBound: etcd revokes a lease no earlier than
// its TTL (rounded up to whole seconds, which only lengthens it) after the grant or
// keep-alive reached its raft leader, so no earlier than ttl after it was sent.
func (e *Lock) EarliestRelease(ttl time.Duration) time.Duration { return ttl }

// lease returns an etcd lease of ttl that runs a full TTL from now: the spare lease
// of (key, owner), kept alive once more, or a new grant.
func (e *Lock) lease(ctx context.Context, key, owner string, ttl time.Duration) (clientv3.LeaseID, error) {
	sk := spareKey{key, owner, seconds(ttl)}
	e.mu.Lock()
	sp, ok := e.spare[sk]
	delete(e.spare, sk)
	e.pruneLocked(time.Now())
	e.mu.Unlock()
	if ok {
		_, err := e.client.KeepAliveOnce(ctx, sp.id)
		if err == nil {
			return sp.id, nil
		}
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return 0, err
		}
	}
	g, err := e.client.Grant(ctx, sk.secs)
	if err != nil {
		return 0, err
	}
	return g.ID, nil
}

// Acquire implements lock.Lock.
func (e *Lock) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (lock.Lease, error) {
	if err := lockarg.Acquire(key, owner, ttl); err != nil {
		return lock.Lease{}, err
	}
	return e.acquire(ctx, key, owner, ttl, 0)
}

// AcquireExpiring implements lock.Expiring: it grants an etcd lease of fenceTTL
// (rounded up to whole seconds) and writes the counter under it in the acquiring
// transaction, so that etcd deletes the counter when that lease lapses, and the next
// acquire of the key counts from 1 again. An attempt that finds the key held leaves
// its grant to lapse.
func (e *Lock) AcquireExpiring(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (lock.Lease, error) {
	if err := lockarg.Expiring(key, owner, ttl, fenceTTL); err != nil {
		return lock.Lease{}, err
	}
	return e.acquire(ctx, key, owner, ttl, fenceTTL)
}

// acquire takes key; a positive fenceTTL puts its counter under a lease of its own,
// 0 leaves it under none.
func (e *Lock) acquire(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (lock.Lease, error) {
	sent := time.Now()
	id, err := e.lease(ctx, key, owner, ttl)
	if err != nil {
		return lock.Lease{}, e.wrap("acquire", key, err)
	}
	hk, fk := e.holderKey(key), e.fenceKey(key)
	e.mu.Lock()
	f := e.fence[key]
	e.mu.Unlock()
	keep := func() { // the campaigner's lease serves its next attempt
		e.mu.Lock()
		e.spare[spareKey{key, owner, seconds(ttl)}] = spare{id: id, until: sent.Add(ttl)}
		e.mu.Unlock()
	}
	var fenceOpts []clientv3.OpOption
	if fenceTTL > 0 {
		g, err := e.client.Grant(ctx, seconds(fenceTTL))
		if err != nil {
			keep()
			return lock.Lease{}, e.wrap("acquire", key, err)
		}
		fenceOpts = append(fenceOpts, clientv3.WithLease(g.ID))
	}
	if f.value >= lock.MaxToken { // what we saw is a hint: ask etcd
		if f, err = e.readFence(ctx, key); err != nil {
			keep()
			return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, err)
		}
	}
	for {
		if f.value >= lock.MaxToken {
			keep()
			return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, lock.ErrFenceExhausted)
		}
		t := f.value + 1
		tok := strconv.FormatUint(t, 10)
		resp, err := e.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(hk), "=", 0), clientv3.Compare(clientv3.ModRevision(fk), "=", f.rev)).
			Then(clientv3.OpPut(fk, tok, fenceOpts...), clientv3.OpPut(hk, value(owner, t), clientv3.WithLease(id))).
			Else(clientv3.OpGet(hk), clientv3.OpGet(fk)).
			Commit()
		if err != nil {
			keep()
			return lock.Lease{}, e.wrap("acquire", key, err)
		}
		if resp.Succeeded {
			e.mu.Lock()
			e.fence[key] = fenceSeen{value: t, rev: resp.Header.Revision}
			e.held[key] = holding{owner: owner, token: t, id: id, until: sent.Add(ttl)}
			e.mu.Unlock()
			return lock.Lease{Key: key, Owner: owner, Token: t, TTL: ttl}, nil
		}
		f = fenceSeen{}
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
			if f.value, err = strconv.ParseUint(string(kvs[0].Value), 10, 64); err != nil {
				keep()
				return lock.Lease{}, fmt.Errorf("acquire %q: counter %q is not a number", key, kvs[0].Value)
			}
			f.rev = kvs[0].ModRevision
		}
		e.mu.Lock()
		e.fence[key] = f
		e.mu.Unlock()
		if len(resp.Responses[0].GetResponseRange().Kvs) == 1 {
			keep()
			return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, lock.ErrHeld)
		}
		// Free, but the counter moved since we read it: try again with its value.
	}
}

// pruneLocked forgets the holdings and spare leases etcd has revoked by now (a
// lease taken once and left to lapse, such as a cron tick's), and the counters
// read of keys no longer held or spared, which would otherwise pile up. e.mu is
// held.
func (e *Lock) pruneLocked(now time.Time) {
	const slack = time.Second // etcd revokes a little after the lease's end
	for k, h := range e.held {
		if now.After(h.until.Add(slack)) {
			delete(e.held, k)
		}
	}
	keep := map[string]bool{}
	for k, sp := range e.spare {
		if now.After(sp.until.Add(slack)) {
			delete(e.spare, k)
		} else {
			keep[k.key] = true
		}
	}
	for k := range e.fence {
		if _, held := e.held[k]; !held && !keep[k] {
			delete(e.fence, k)
		}
	}
}

// find returns the etcd lease of the holding lease stands for: the one this Lock
// recorded, or else the holder key's, when its value is lease's. A holder key
// stored under lease's owner with another token is lock.ErrDuplicateOwner.
func (e *Lock) find(ctx context.Context, op string, lease lock.Lease) (clientv3.LeaseID, error) {
	e.mu.Lock()
	h, ok := e.held[lease.Key]
	e.mu.Unlock()
	if ok && h.owner == lease.Owner && h.token == lease.Token {
		return h.id, nil
	}
	resp, err := e.client.Get(ctx, e.holderKey(lease.Key))
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", op, lease.Key, err)
	}
	if len(resp.Kvs) == 1 {
		kv := resp.Kvs[0]
		if string(kv.Value) == value(lease.Owner, lease.Token) {
			return clientv3.LeaseID(kv.Lease), nil
		}
		if owner, _, ok := parseValue(string(kv.Value)); ok && owner == lease.Owner {
			return 0, fmt.Errorf("%s %q token %d: owner %q: %w: %w", op, lease.Key, lease.Token, lease.Owner, lock.ErrDuplicateOwner, lock.ErrNotHeld)
		}
	}
	return 0, fmt.Errorf("%s %q token %d: %w", op, lease.Key, lease.Token, lock.ErrNotHeld)
}

// forget drops the record of lease's holding.
func (e *Lock) forget(lease lock.Lease) {
	e.mu.Lock()
	if h, ok := e.held[lease.Key]; ok && h.owner == lease.Owner && h.token == lease.Token {
		delete(e.held, lease.Key)
	}
	e.mu.Unlock()
}
