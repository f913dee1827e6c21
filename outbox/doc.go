// Package outbox publishes events through the database: a transactional outbox on
// PostgreSQL relayed to Kafka, and an inbox that makes a consumer's handling happen
// once per event.
//
//   - Outbox.Write inserts events in the caller's pgx transaction, beside the
//     business rows: they exist if and only if the transaction commits.
//   - Relay is an entrypoint that publishes them with a kafkakit.Producer. It is
//     safe on every replica and needs no leader: each pass claims the oldest rows
//     with FOR UPDATE SKIP LOCKED, publishes them, deletes them and commits. It is
//     woken by the NOTIFY each Write sends at commit, so an event leaves within a
//     round trip; a jittered tick covers notices lost while its listening
//     connection was down. Events of one key are published in the order they were
//     written (Write serialises the writers of a key), and never by two replicas at
//     once. Delivery is at least once: an event whose publication was cut (a broker
//     that timed out, a database that went away before the delete committed) is
//     published again, with the same id in its outbox-event-id header (EventID).
//   - Inbox.Record, in the consumer's own transaction, records an event id and
//     reports whether it was new; Inbox.Handle wraps a handler with it, so a
//     redelivered event changes nothing.
//
// The tables are the user's: Outbox.Schema and Inbox.Schema return their SQL for a
// migration, and RelayConfig.CreateTable (or Create) creates them. A table that is
// missing or has the wrong shape is a *fault.ConfigError naming it, at the Relay's
// Bind (or Verify). See docs/outbox.md.
//
// It is apart from pgkit and kafkakit because it links both drivers; a service
// that uses neither outbox nor inbox links only what it uses.
package outbox
