// Package kafkaentry is a Kafka consumer-group entrypoint on segmentio/kafka-go: it
// feeds each message to a Handler and commits its offset only once the handler
// succeeded, so that stopping a replica costs no message.
//
// # Lifecycle
//
//   - New checks the Config and returns every problem at once, as a *cfgerr.Error.
//   - Bind checks that a broker answers and that the topics exist (or creates them,
//     with AutoCreateTopics), then creates the kafka-go Reader. kafka-go joins the
//     group as soon as the Reader exists, so the member is in the group after Bind
//     and may prefetch messages; no handler runs before Serve.
//   - Serve starts the fetch loop, the workers and the commit loop, and returns nil
//     at stop while they keep going: messages are handled and committed through the
//     drain delay.
//   - Drain stops fetching, lets the running handlers finish, commits synchronously
//     what was handled and leaves the group (Reader.Close, bounded by CloseTimeout).
//   - Stop cancels the handlers, commits what was handled if Drain did not, and
//     closes everything, bounded by its ctx.
//
// # Guarantees
//
// At least once: an offset is committed only after its message was handled, or
// written to the dead-letter topic. Offsets are committed in batches (CommitBatch
// messages or CommitInterval, whichever first), beside the handlers; a crash
// delivers again at most what the last batch did not cover, and a graceful drain
// delivers nothing again. Within a partition, messages are handled one at a time in
// offset order, also with several Workers (a partition always goes to the same
// worker).
//
// A handler error or panic (recovered into a *safe.PanicError) is retried on a
// jittered exponential schedule (Config.Retry), except an error wrapping
// ErrUndecodable, which is never retried. Then Config.OnFailure applies:
// DeadLetter(topic) writes the message to topic with headers saying where it came
// from and why it failed (HeaderTopic, …) and moves on; StopEntrypoint() leaves the
// offset uncommitted and makes Serve return a *HandlerError, so the Host stops the
// service (exit code 1) and the message is delivered again after the restart.
// Either way a bad message never silently disappears, and a partition never stays
// stuck on one without it being visible.
//
// # What it does not do
//
// Duplicates are possible after a crash, a drain that ran out of time, or a
// rebalance: kafka-go tells the consumer nothing when partitions are revoked, so
// messages already fetched for a revoked partition are still handled, and their
// offsets may be committed after the new owner's (moving the group's offset back,
// never past an unhandled message). Handlers must be idempotent. Ordering is per
// partition only. There is no exactly-once processing and no transactional
// produce.
//
// # kafka-go quirks handled here
//
// Reader.Close can block for up to MaxWait (issue #428) or hang (issue #1248), and
// commits left to kafka-go's end-of-generation flush have been lost before (PR
// #715). The consumer therefore uses synchronous kafka-go commits, batches them
// itself, commits before closing, closes in a goroutine and abandons a Close that
// outlives CloseTimeout. MaxWait defaults to 500ms to keep Close short. kafka-go
// joins the group when the Reader is made, not at the first fetch, hence in Bind.
package kafkaentry
