// Package kafkaentry is a Kafka consumer-group entrypoint on segmentio/kafka-go: it
// feeds each message to a Handler and commits its offset only once the handler
// succeeded, so that stopping a replica — or a rebalance — costs no message and
// delivers none twice.
//
// # Lifecycle
//
//   - New checks the Config and returns every problem at once, as a *fault.ConfigError.
//   - Bind checks that a broker answers and that the topics exist (or creates them,
//     with AutoCreateTopics), then joins the group through kafka-go's ConsumerGroup.
//     The member takes part in rebalances from then on; nothing is fetched and no
//     handler runs before Serve.
//   - Serve starts consuming and returns nil at stop while consumption goes on:
//     messages are handled and committed through the drain delay.
//   - Drain stops fetching, lets the running handlers finish, commits synchronously
//     what was handled and leaves the group (ConsumerGroup.Close, bounded by
//     CloseTimeout).
//   - Stop cancels the handlers, commits what was handled if Drain did not, and
//     closes everything, bounded by its ctx.
//
// # Generations
//
// The consumer works generation by generation, as the group coordinator hands them
// out (kafka.ConsumerGroup.Next). In each it opens one reader per assigned partition,
// outside any group, at the offset the group committed; one goroutine per partition
// fetches and handles that partition's messages one at a time, in offset order, and
// Config.Workers bounds how many partitions are in their handler at once. Offsets are
// committed in that generation (kafka.Generation.CommitOffsets), in batches.
//
// A generation ends when a member joins or leaves (a rebalance, which reaches this
// member within a HeartbeatInterval) or when the group is closed. Then every
// partition stops fetching, a retry wait ends at once, the handlers in flight finish
// — within half the RebalanceTimeout; after that their ctx is cancelled and they are
// abandoned a second later, uncommitted — and the generation's handled offsets are
// committed synchronously, before the consumer lets the generation go. kafka-go joins
// the next generation only after that, and the coordinator assigns partitions only
// once every member rejoined, so the next owner of a partition starts right after
// the last message handled here. This is what kafka-go's high-level Reader cannot do:
// it says nothing when partitions are revoked, and its batched commits of a revoked
// partition come too late.
//
// # Guarantees
//
// At least once: an offset is committed only after its message was handled, or
// written to the dead-letter topic. Exactly once across graceful restarts and the
// rebalances they cause, as long as handlers finish within half the
// RebalanceTimeout and the broker answers: a drained replica commits everything it
// handled before it leaves, and a replica that keeps running commits everything
// before its partitions move. Offsets are otherwise committed in batches
// (CommitBatch messages or CommitInterval, whichever first), beside the handlers, so
// a crash delivers again at most what the last batch did not cover.
//
// # Outages and poison messages
//
// A handler failure is about the message (poison) or about the world (a dependency
// outage), and only the first may be dead-lettered. The consumer tells them apart
// with Config.Outage: an error the handler marks Poison, fault.Permanent,
// ErrUndecodable or a panic is the message's; one it marks Transient, or that IsTransient recognises
// (network errors, timeouts, a database connection lost), is the world's; an
// unclassified failure is an outage when Outage.Check says the dependency is down or
// when Outage.DistinctFailures distinct messages failed in a row. During an outage
// the message's partition pauses on it: the member keeps its session and its
// assignment, nothing past the message is committed, and the message is retried on a
// capped backoff (at most Outage.Max, 1s by default, apart) for as long as the
// outage lasts, so consumption resumes within that of the dependency's return. The
// pause shows in Paused, StatusDetail (the Host's /debug/lifecycle), Health (the
// readiness check fails with ErrPaused) and the servicewright_kafka_paused gauge. A
// drain during a pause releases the message uncommitted at once.
//
// A poison failure or panic (recovered into a *fault.PanicError) is retried on a
// jittered exponential schedule (Config.Retry), except an error wrapping
// ErrUndecodable or marked with fault.Permanent ("retrying cannot fix it", the mark
// every servicewright component honours), which is never retried and never taken for
// an outage; its DeadLetterInfo.ErrorType says "undecodable" or "permanent". Then
// Config.OnFailure applies: DeadLetter(topic) writes the message to topic with
// headers saying where it came from and why it failed (DeadLetterInfo, read back by
// ParseDeadLetter) and moves on; StopEntrypoint() leaves the offset uncommitted and
// makes Serve return a *HandlerError, so the Host stops the service (exit code 1)
// and the message is delivered again after the restart.
// Either way a bad message never silently disappears, and a partition never stays
// stuck on one without it being visible.
//
// # What it does not do
//
// Duplicates are still possible after a crash (up to the last batch), a drain that
// ran out of time, a handler cut short at a rebalance, a final commit the broker
// refused (a member thrown out of the group after missing its SessionTimeout), or a
// Close abandoned after CloseTimeout. Handlers must be idempotent. Ordering is per
// partition only. There is no exactly-once processing across crashes and no
// transactional produce. A killed replica's partitions wait for its SessionTimeout
// before they move.
//
// # kafka-go quirks handled here
//
// kafka-go's group Reader gives no signal when partitions are revoked, and its Close
// is known to hang (issue #1248); ConsumerGroup.Close, used here instead, waits for
// a join in progress and for the broker; closing a partition reader waits up to
// MaxWait for the fetch in progress (issue #428). The consumer therefore commits
// before closing, closes the group in a goroutine and abandons a Close that outlives
// CloseTimeout, lets a generation go before its readers are closed, and defaults
// MaxWait to 500ms. It never lets kafka-go commit on its own: commits left to
// kafka-go's end-of-generation flush have been lost before (PR #715).
package kafkaentry
