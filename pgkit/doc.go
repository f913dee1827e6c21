// Package pgkit holds what servicewright needs of PostgreSQL, beside the pgx driver
// so that the core packages link no driver: a lock.Lock on session advisory locks
// with fencing tokens and release notices (Lock), and an fx module that provides it
// from a URL (Module).
//
// Choose it for leadership when the fleet runs PostgreSQL and a crashed leader must
// be replaced at once: the server frees a lease the moment its holder's connection
// closes, so the next replica leads within one CampaignEvery, where a Redis lease is
// held until its TTL lapses. A graceful release NOTIFYs the waiting replicas, which
// campaign at once. A paused or partitioned leader keeps its lease until the
// session's idle_session_timeout (the lease's TTL) ends the session; fencing tokens
// cover what it does after that.
package pgkit
