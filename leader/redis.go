package leader

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/fault"
)

var _ Lock = (*RedisLock)(nil)

// DefaultKeyPrefix starts the name of every Redis key a RedisLock writes.
const DefaultKeyPrefix = "servicewright:lock:"

// The scripts. KEYS[1] is the lease, KEYS[2] the fencing counter; both carry the same
// hash tag, so each script touches one Redis Cluster slot. The lease's value is
// "owner:token"; string.format('%d') keeps a token exact where tostring would switch
// to exponent notation above 10^14.
const (
	acquireLua = `
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
if f >= tonumber(ARGV[3]) then return -2 end
local t = redis.call('INCR', KEYS[2])
if tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%d', t), 'NX', 'PX', ARGV[2])
return t`
	renewLua = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`
	releaseLua = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`
	advanceLua = `
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
if f >= tonumber(ARGV[2]) then return -2 end
if f < tonumber(ARGV[1]) then redis.call('SET', KEYS[2], ARGV[1]) end
return 1`
	inspectLua = `
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2])}`
)

// RedisLock is a Lock on Redis (single node, Sentinel or Cluster) through a go-redis
// v9 client. Each operation is one Lua script, so it is atomic on the server:
//
//   - Acquire checks the lease key is absent, INCRs the fencing counter and stores
//     "owner:token" with SET NX PX ttl, in one script.
//   - Renew (PEXPIRE) and Release (DEL) act only when the stored value is still
//     "owner:token", so a holder whose lease lapsed and was taken cannot extend or
//     free its successor's.
//   - The counter never expires and is never deleted by the lock.
//
// For a lock named key the Redis keys are PREFIX{key} (the lease) and PREFIX{key}:fence
// (the counter), under one hash tag.
//
// Redis keeps the lease's expiry on its own clock, and a Redis that restarts without
// persistence, or fails over to a replica that missed the latest writes, loses leases
// and counters: the counter then starts again from zero and tokens repeat. Fencing
// stores that claim a token with `fence < token` refuse those repeats, and
// AdvanceFence (the Leadership's FenceFloor) moves the counter past them.
type RedisLock struct {
	client   redis.UniversalClient
	prefix   string
	fenceTTL time.Duration // 0: counters never expire

	acquire, renew, release, advance, inspect *redis.Script
}

// RedisOption configures a RedisLock.
type RedisOption func(*RedisLock)

// WithKeyPrefix replaces DefaultKeyPrefix. The prefix must not contain '{' or '}',
// which would move the hash tag.
func WithKeyPrefix(p string) RedisOption { return func(r *RedisLock) { r.prefix = p } }

// WithFenceTTL lets each fencing counter expire d after the last acquire of its key.
// It is for locks taken once per key and never again — one per cron tick, one per
// batch — whose counters would otherwise pile up in Redis forever. Never use it for
// a lease that fences a store: a counter that expires restarts at 1, and only a
// FenceFloor brings it back above the store's fence.
func WithFenceTTL(d time.Duration) RedisOption { return func(r *RedisLock) { r.fenceTTL = d } }

// NewRedisLock returns a RedisLock using client. It sends nothing to Redis.
func NewRedisLock(client redis.UniversalClient, opts ...RedisOption) *RedisLock {
	r := &RedisLock{
		client:  client,
		prefix:  DefaultKeyPrefix,
		acquire: redis.NewScript(acquireLua),
		renew:   redis.NewScript(renewLua),
		release: redis.NewScript(releaseLua),
		advance: redis.NewScript(advanceLua),
		inspect: redis.NewScript(inspectLua),
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// keys returns the lease and counter keys of the lock named key.
func (r *RedisLock) keys(key string) ([]string, error) {
	var l fault.Problems
	if r.client == nil {
		l.Addf("RedisLock.client", "must not be nil")
	}
	if strings.ContainsAny(r.prefix, "{}") {
		l.Addf("RedisLock.prefix", "must not contain '{' or '}', got %q", r.prefix)
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	lease := r.prefix + "{" + key + "}"
	return []string{lease, lease + ":fence"}, nil
}

func value(owner string, token uint64) string {
	return owner + ":" + strconv.FormatUint(token, 10)
}

// Acquire implements Lock.
func (r *RedisLock) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (Lease, error) {
	if err := checkAcquire(key, owner, ttl); err != nil {
		return Lease{}, err
	}
	keys, err := r.keys(key)
	if err != nil {
		return Lease{}, err
	}
	n, err := r.acquire.Run(ctx, r.client, keys, owner, ms(ttl), MaxToken, ms(max(r.fenceTTL, 0))).Int64()
	switch {
	case err != nil:
		return Lease{}, fmt.Errorf("acquire %q: %w", key, err)
	case n == -1:
		return Lease{}, fmt.Errorf("acquire %q: %w", key, ErrHeld)
	case n == -2:
		return Lease{}, fmt.Errorf("acquire %q: %w", key, ErrFenceExhausted)
	case n <= 0:
		return Lease{}, fmt.Errorf("acquire %q: unexpected reply %d", key, n)
	}
	return Lease{Key: key, Owner: owner, Token: uint64(n), TTL: ttl}, nil
}

// Renew implements Lock.
func (r *RedisLock) Renew(ctx context.Context, lease Lease) error {
	return r.compare(ctx, r.renew, "renew", lease, ms(lease.TTL))
}

// Release implements Lock.
func (r *RedisLock) Release(ctx context.Context, lease Lease) error {
	return r.compare(ctx, r.release, "release", lease)
}

func (r *RedisLock) compare(ctx context.Context, s *redis.Script, op string, lease Lease, args ...any) error {
	if err := checkLease(lease); err != nil {
		return err
	}
	keys, err := r.keys(lease.Key)
	if err != nil {
		return err
	}
	n, err := s.Run(ctx, r.client, keys[:1], append([]any{value(lease.Owner, lease.Token)}, args...)...).Int64()
	if err != nil {
		return fmt.Errorf("%s %q: %w", op, lease.Key, err)
	}
	if n != 1 {
		return fmt.Errorf("%s %q token %d: %w", op, lease.Key, lease.Token, ErrNotHeld)
	}
	return nil
}

// AdvanceFence implements Lock.
func (r *RedisLock) AdvanceFence(ctx context.Context, key string, floor uint64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if floor >= MaxToken {
		return fmt.Errorf("advance %q to %d: %w", key, floor, ErrFenceOutOfRange)
	}
	keys, err := r.keys(key)
	if err != nil {
		return err
	}
	n, err := r.advance.Run(ctx, r.client, keys, floor, MaxToken).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("advance %q: %w", key, err)
	case n == -2:
		return fmt.Errorf("advance %q: %w", key, ErrFenceExhausted)
	}
	return nil
}

// Inspect implements Lock.
func (r *RedisLock) Inspect(ctx context.Context, key string) (Holder, error) {
	if err := checkKey(key); err != nil {
		return Holder{}, err
	}
	keys, err := r.keys(key)
	if err != nil {
		return Holder{}, err
	}
	res, err := r.inspect.Run(ctx, r.client, keys).Slice()
	if err != nil {
		return Holder{}, fmt.Errorf("inspect %q: %w", key, err)
	}
	bad := func() (Holder, error) { return Holder{}, fmt.Errorf("inspect %q: unexpected reply %v", key, res) }
	if len(res) != 3 {
		return bad()
	}
	var h Holder
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
