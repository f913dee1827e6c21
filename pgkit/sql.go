package pgkit

// The statements. %[1]s is the quoted fence table. Each acquire, renewal and release
// is one statement on the lease's own connection.
const (
	tableDDL = `CREATE TABLE IF NOT EXISTS %[1]s (
	key text PRIMARY KEY,
	owner text NOT NULL DEFAULT '',
	token bigint NOT NULL DEFAULT 0,
	fence bigint NOT NULL DEFAULT 0,
	ttl_ms bigint NOT NULL DEFAULT 0,
	expires_at timestamptz)`

	// A table created before expires_at existed gains it.
	expiresDDL = `ALTER TABLE %[1]s ADD COLUMN IF NOT EXISTS expires_at timestamptz`

	// sweepSQL deletes the rows of keys taken with AcquireExpiring whose expiry has
	// passed. It is a statement of its own, run before such an acquire, and skips
	// the rows another transaction has locked, so that it never waits and never
	// deadlocks with an acquire; a skipped row goes at a later sweep.
	sweepSQL = `DELETE FROM %[1]s WHERE key IN (
	SELECT key FROM %[1]s WHERE expires_at <= now() FOR UPDATE SKIP LOCKED LIMIT 1000)`

	// $1 key, $2 advisory key, $3 owner, $4 ttl in ms, $5 MaxToken, $6 ttl in ms as
	// text, $7 the row's expiry in ms from now (0: none). The advisory lock is taken
	// first; the fence row is written only when it was, and only below MaxToken (a
	// row past its expiry counts from 0 again); the session's idle timeout becomes
	// the TTL.
	acquireSQL = `WITH got AS (SELECT pg_try_advisory_lock($2) AS ok),
up AS (
	INSERT INTO %[1]s AS t (key, owner, token, fence, ttl_ms, expires_at)
	SELECT $1, $3, 1, 1, $4, ` + expiresAt7 + ` FROM got WHERE ok
	ON CONFLICT (key) DO UPDATE SET ` + bump + `, owner = EXCLUDED.owner, ttl_ms = EXCLUDED.ttl_ms, expires_at = EXCLUDED.expires_at
	WHERE t.fence < $5 OR t.expires_at <= now()
	RETURNING t.token)
SELECT (SELECT ok FROM got), (SELECT token FROM up),
	set_config('idle_session_timeout', CASE WHEN (SELECT ok FROM got) THEN $6 ELSE '0' END, false)`

	renewSQL = `SELECT 1`

	// $1 advisory key, $2 channel, $3 owner. The unlock is immediate; the notice
	// goes out when the statement commits, an instant later.
	releaseSQL = `SELECT pg_advisory_unlock($1), set_config('idle_session_timeout', '0', false), '' FROM pg_notify($2, $3)`

	unlockSQL = `SELECT pg_advisory_unlock($1), set_config('idle_session_timeout', '0', false)`

	// $1 key, $2 floor, $3 MaxToken: no row changed means the counter is exhausted.
	// A row past its expiry counts from 0, and becomes permanent, as a new row.
	advanceSQL = `INSERT INTO %[1]s AS t (key, fence) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET fence = GREATEST(CASE WHEN t.expires_at <= now() THEN 0 ELSE t.fence END, EXCLUDED.fence),
	expires_at = CASE WHEN t.expires_at <= now() THEN NULL ELSE t.expires_at END
WHERE t.fence < $3 OR t.expires_at <= now()`

	// $1 key, $2 and $3 the advisory key's high and low halves, as pg_locks shows
	// a bigint key.
	inspectSQL = `SELECT t.owner, t.token, t.fence, t.ttl_ms, EXISTS (
	SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid::int8 = $2 AND objid::int8 = $3)
FROM %[1]s t WHERE t.key = $1`

	// Server-side dead-client detection on each lock connection (DeadClient): $1
	// keepalive idle (s), $2 interval (s), $3 count, $4 user timeout (ms), as text.
	keepaliveSQL = `SELECT set_config('tcp_keepalives_idle', $1, false), set_config('tcp_keepalives_interval', $2, false),
	set_config('tcp_keepalives_count', $3, false), set_config('tcp_user_timeout', $4, false)`

	// The waiting acquire, sent as one pipeline (one round trip, one implicit
	// transaction): lockTimeoutSQL bounds the wait ($1 ms as text; reverted with
	// the transaction when the wait times out), waitLockSQL queues on the advisory
	// lock ($1 advisory key), then lockTimeoutSQL with '0', then waitedSQL writes
	// the fence row and the idle timeout as acquireSQL does. A session-level
	// advisory lock survives the transaction's end either way.
	lockTimeoutSQL = `SELECT set_config('lock_timeout', $1, false)`
	waitLockSQL    = `SELECT pg_advisory_lock($1)`
	// $1 key, $2 owner, $3 ttl in ms, $4 MaxToken, $5 ttl in ms as text.
	waitedSQL = `WITH up AS (
	INSERT INTO %[1]s AS t (key, owner, token, fence, ttl_ms, expires_at)
	VALUES ($1, $2, 1, 1, $3, NULL)
	ON CONFLICT (key) DO UPDATE SET ` + bump + `, owner = EXCLUDED.owner, ttl_ms = EXCLUDED.ttl_ms, expires_at = NULL
	WHERE t.fence < $4 OR t.expires_at <= now()
	RETURNING t.token)
SELECT (SELECT token FROM up), set_config('idle_session_timeout', CASE WHEN EXISTS (SELECT 1 FROM up) THEN $5 ELSE '0' END, false)`
)

// Fragments of the acquiring statements: bump draws the next token, from 0 again
// for a row past its expiry (t is the row as it was); expiresAt7 is the expiry of
// a row written with $7 ms to live, NULL (never) for 0.
const (
	bump       = `fence = CASE WHEN t.expires_at <= now() THEN 1 ELSE t.fence + 1 END, token = CASE WHEN t.expires_at <= now() THEN 1 ELSE t.fence + 1 END`
	expiresAt7 = `CASE WHEN $7::bigint > 0 THEN now() + $7::bigint * interval '1 millisecond' END`
)

// ddlLockKey serialises CREATE TABLE IF NOT EXISTS across processes, which would
// otherwise race on the catalog.
const ddlLockKey int64 = 0x73776c6f636b // "swlock"
