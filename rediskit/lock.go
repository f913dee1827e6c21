package rediskit

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/internal/wake"
	"github.com/servicewright/servicewright/lock"
)

var (
	_ lock.Lock         = (*Lock)(nil)
	_ lock.Notifier     = (*Lock)(nil)
	_ lock.ReleaseBound = (*Lock)(nil)
)

// defaultKeyPrefix starts the name of every Redis key a Lock writes.
const defaultKeyPrefix = "servicewright:lock:"

// The scripts. KEYS[1] is the lease, KEYS[2] the fencing counter; both carry the same
// hash tag, so each script touches one Redis Cluster slot. The lease's value is
// "owner:token"; string.format('%d') keeps a token exact where tostring would switch
// to exponent notation above 10^14. The release publishes the releasing owner on the
// key's channel (ARGV[2]) in the same script that frees the lease.
const (
	acquireLua = `
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
if f >= tonumber(ARGV[3]) then return -2 end
local t = redis.call('INCR', KEYS[2])
if tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%d', t), 'NX', 'PX', ARGV[2])
return t`
	// renew and release return -1 when the lease is held by the same owner with
	// another token (ARGV[3] is the owner): a duplicate owner id.
	renewLua = `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if v and string.sub(v, 1, #ARGV[3] + 1) == ARGV[3] .. ':' and string.match(string.sub(v, #ARGV[3] + 2), '^%d+$') then return -1 end
return 0`
	releaseLua = `
local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] then
	if v and string.sub(v, 1, #ARGV[3] + 1) == ARGV[3] .. ':' and string.match(string.sub(v, #ARGV[3] + 2), '^%d+$') then return -1 end
	return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`
	advanceLua = `
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
if f >= tonumber(ARGV[2]) then return -2 end
if f < tonumber(ARGV[1]) then redis.call('SET', KEYS[2], ARGV[1]) end
return 1`
	inspectLua = `
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2])}`
)

// Lock is a lock.Lock on Redis (single node, Sentinel or Cluster) through a go-redis
// v9 client. Each operation is one Lua script, so it is atomic on the server:
//
//   - Acquire checks the lease key is absent, INCRs the fencing counter and stores
//     "owner:token" with SET NX PX ttl, in one script.
//   - Renew (PEXPIRE) and Release (DEL) act only when the stored value is still
//     "owner:token", so a holder whose lease lapsed and was taken cannot extend or
//     free its successor's.
//   - Release PUBLISHes the releasing owner on the key's channel in the same
//     script, and WatchReleases (lock.Notifier) listens there, so waiting replicas
//     campaign at once. One Redis subscription carries every watch of a Lock.
//   - The counter never expires and is never deleted by the lock (unless
//     LockConfig.FenceTTL says so, or the key is taken with AcquireExpiring).
//
// For a lock named key the Redis keys are PREFIX{key} (the lease) and PREFIX{key}:fence
// (the counter), under one hash tag, and the release channel is PREFIX{key}:released.
//
// Redis keeps the lease's expiry on its own clock, and a Redis that restarts without
// persistence, or fails over to a replica that missed the latest writes, loses leases
// and counters: the counter then starts again from zero and tokens repeat. Fencing
// stores that claim a token with `fence < token` refuse those repeats, and
// AdvanceFence (the Leadership's FenceFloor) moves the counter past them. A crashed
// holder's lease is held until its TTL lapses; the PostgreSQL lock (package pgkit)
// frees it when the holder's connection closes.
type Lock struct {
	client   redis.UniversalClient
	prefix   string
	fenceTTL time.Duration // 0: counters never expire

	acquire, renew, release, advance, inspect *redis.Script

	watch    sync.Mutex // guards ps, chans and dispatch
	hub      wake.Hub
	ps       *redis.PubSub
	chans    map[string]string // channel → key
	dispatch chan struct{}     // closed when the dispatcher has exited
}

// LockConfig configures a Lock. The zero value takes the defaults.
type LockConfig struct {
	// KeyPrefix starts every key and channel the lock uses. It must not contain
	// '{' or '}', which would move the hash tag. Default "servicewright:lock:".
	KeyPrefix string
	// FenceTTL, when positive, lets each fencing counter expire FenceTTL after the
	// last acquire of its key. It is for locks taken once per key and never again —
	// one per cron tick, one per batch — whose counters would otherwise pile up in
	// Redis forever. Never use it for a lease that fences a store: a counter that
	// expires restarts at 1, and only a FenceFloor brings it back above the store's
	// fence. Default 0: counters never expire.
	FenceTTL time.Duration
}

// resolve fills in the default KeyPrefix and records every problem with cfg in l
// under its field name.
func (cfg LockConfig) resolve(l *fault.Problems) LockConfig {
	if strings.ContainsAny(cfg.KeyPrefix, "{}") {
		l.Addf("KeyPrefix", "must not contain '{' or '}', got %q", cfg.KeyPrefix)
	}
	if cfg.FenceTTL < 0 {
		l.Addf("FenceTTL", "must not be negative, got %v", cfg.FenceTTL)
	}
	cfg.KeyPrefix = cmp.Or(cfg.KeyPrefix, defaultKeyPrefix)
	return cfg
}

// NewLock returns a Lock using client. It validates cfg into a *fault.ConfigError
// naming each field, and sends nothing to Redis.
func NewLock(client redis.UniversalClient, cfg LockConfig) (*Lock, error) {
	var l fault.Problems
	if client == nil {
		l.Addf("client", "must not be nil")
	}
	cfg = cfg.resolve(&l)
	if err := l.Err(); err != nil {
		return nil, err
	}
	return &Lock{
		client:   client,
		prefix:   cfg.KeyPrefix,
		fenceTTL: cfg.FenceTTL,
		acquire:  redis.NewScript(acquireLua),
		renew:    redis.NewScript(renewLua),
		release:  redis.NewScript(releaseLua),
		advance:  redis.NewScript(advanceLua),
		inspect:  redis.NewScript(inspectLua),
	}, nil
}

// keys returns the lease and counter keys of the lock named key.
func (r *Lock) keys(key string) []string {
	lease := r.prefix + "{" + key + "}"
	return []string{lease, lease + ":fence"}
}

// channel returns the release channel of the lock named key.
func (r *Lock) channel(key string) string { return r.prefix + "{" + key + "}:released" }

func value(owner string, token uint64) string {
	return owner + ":" + strconv.FormatUint(token, 10)
}

// Acquire implements lock.Lock.
func (r *Lock) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (lock.Lease, error) {
	return r.acquireFor(ctx, key, owner, ttl, r.fenceTTL)
}

// AcquireExpiring is Acquire for a key taken once and never again (a cron tick's
// lease, a batch's): in the same script, the key's fencing counter is set to expire
// fenceTTL after this acquire, whatever LockConfig.FenceTTL says, so such counters do
// not pile up in Redis. The job that takes the key knows how long it must live (the
// lease's TTL and then some, so that no late attempt draws a token again);
// cronentry's OncePerFleet calls it. A fenceTTL that is not positive is a
// *fault.ConfigError naming "fenceTTL".
func (r *Lock) AcquireExpiring(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (lock.Lease, error) {
	if err := lockarg.Expiring(key, owner, ttl, fenceTTL); err != nil {
		return lock.Lease{}, err
	}
	return r.acquireFor(ctx, key, owner, ttl, fenceTTL)
}

func (r *Lock) acquireFor(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (lock.Lease, error) {
	if err := lockarg.Acquire(key, owner, ttl); err != nil {
		return lock.Lease{}, err
	}
	keys := r.keys(key)
	n, err := r.acquire.Run(ctx, r.client, keys, owner, ms(ttl), lock.MaxToken, ms(max(fenceTTL, 0))).Int64()
	switch {
	case err != nil:
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, err)
	case n == -1:
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, lock.ErrHeld)
	case n == -2:
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, lock.ErrFenceExhausted)
	case n <= 0:
		return lock.Lease{}, fmt.Errorf("acquire %q: unexpected reply %d", key, n)
	}
	return lock.Lease{Key: key, Owner: owner, Token: uint64(n), TTL: ttl}, nil
}

// Renew implements lock.Lock.
func (r *Lock) Renew(ctx context.Context, lease lock.Lease) error {
	return r.compare(ctx, r.renew, "renew", lease, ms(lease.TTL), lease.Owner)
}

// Release implements lock.Lock.
func (r *Lock) Release(ctx context.Context, lease lock.Lease) error {
	return r.compare(ctx, r.release, "release", lease, r.channel(lease.Key), lease.Owner)
}

func (r *Lock) compare(ctx context.Context, s *redis.Script, op string, lease lock.Lease, args ...any) error {
	if err := lockarg.Lease(lease.Key, lease.Owner, lease.TTL, lease.Token); err != nil {
		return err
	}
	keys := r.keys(lease.Key)
	n, err := s.Run(ctx, r.client, keys[:1], append([]any{value(lease.Owner, lease.Token)}, args...)...).Int64()
	if err != nil {
		return fmt.Errorf("%s %q: %w", op, lease.Key, err)
	}
	if n == -1 {
		return fmt.Errorf("%s %q token %d: owner %q: %w: %w", op, lease.Key, lease.Token, lease.Owner, lock.ErrDuplicateOwner, lock.ErrNotHeld)
	}
	if n != 1 {
		return fmt.Errorf("%s %q token %d: %w", op, lease.Key, lease.Token, lock.ErrNotHeld)
	}
	return nil
}

// EarliestRelease implements lock.ReleaseBound: Redis hands a lease to another owner
// when its TTL lapses, counted on Redis's clock from when the acquire or renewal
// reached it, so no earlier than ttl after it was sent.
func (r *Lock) EarliestRelease(ttl time.Duration) time.Duration { return ttl }

// AdvanceFence implements lock.Lock.
func (r *Lock) AdvanceFence(ctx context.Context, key string, floor uint64) error {
	if err := lockarg.Key(key); err != nil {
		return err
	}
	if floor >= lock.MaxToken {
		return fmt.Errorf("advance %q to %d: %w", key, floor, lock.ErrFenceOutOfRange)
	}
	keys := r.keys(key)
	n, err := r.advance.Run(ctx, r.client, keys, floor, lock.MaxToken).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("advance %q: %w", key, err)
	case n == -2:
		return fmt.Errorf("advance %q: %w", key, lock.ErrFenceExhausted)
	}
	return nil
}

// Inspect implements lock.Lock.
func (r *Lock) Inspect(ctx context.Context, key string) (lock.Holder, error) {
	if err := lockarg.Key(key); err != nil {
		return lock.Holder{}, err
	}
	keys := r.keys(key)
	res, err := r.inspect.Run(ctx, r.client, keys).Slice()
	if err != nil {
		return lock.Holder{}, fmt.Errorf("inspect %q: %w", key, err)
	}
	bad := func() (lock.Holder, error) {
		return lock.Holder{}, fmt.Errorf("inspect %q: unexpected reply %v", key, res)
	}
	if len(res) != 3 {
		return bad()
	}
	var h lock.Holder
	if s, ok := res[2].(string); ok {
		if h.Fence, err = strconv.ParseUint(s, 10, 64); err != nil {
			return bad()
		}
	}
	v, ok := res[0].(string)
	if !ok { // free
		return h, nil
	}
	i := strings.LastIndexByte(v, ':')
	if i < 0 {
		return bad()
	}
	h.Owner = v[:i]
	if h.Token, err = strconv.ParseUint(v[i+1:], 10, 64); err != nil {
		return bad()
	}
	if pttl, ok := res[1].(int64); ok && pttl > 0 {
		h.TTL = time.Duration(pttl) * time.Millisecond
	}
	return h, nil
}

// ms converts d to whole milliseconds for PX/PEXPIRE, rounding up so that a positive
// TTL never becomes 0.
func ms(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
