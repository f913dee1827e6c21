package kafkaentry

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/kafkakit"
)

// Defaults for the zero fields of a Config; each field's doc states its own.
const (
	defaultName           = "kafka"
	defaultMinBytes       = 1
	defaultMaxBytes       = 10 << 20 // 10 MiB
	defaultMaxWait        = 500 * time.Millisecond
	defaultQueueCapacity  = 100
	defaultCommitInterval = time.Second
	defaultCommitBatch    = 100
	defaultWorkers        = 1
	defaultDialTimeout    = 5 * time.Second
	defaultCloseTimeout   = 5 * time.Second

	defaultHeartbeatInterval = time.Second
	defaultSessionTimeout    = 10 * time.Second
	defaultRebalanceTimeout  = 30 * time.Second

	defaultRetryAttempts = 3
	defaultRetryInitial  = 100 * time.Millisecond
	defaultRetryMax      = 5 * time.Second
)

// Config describes a consumer-group entrypoint. Zero fields take the default each field's doc states;
// negative ones are errors.
type Config struct {
	// Name identifies the entrypoint in logs, metrics and errors. Default "kafka".
	Name string

	// Brokers is the bootstrap list, each "host:port". Required.
	Brokers []string

	// GroupID is the consumer group. Offsets are committed for it. Required.
	GroupID string

	// Topics are the topics the group consumes. Required; each must exist at Bind
	// unless AutoCreateTopics is set.
	Topics []string

	// StartOffset is where a partition with no committed offset starts:
	// kafka.FirstOffset (the default, also for 0) or kafka.LastOffset.
	StartOffset int64

	// MinBytes, MaxBytes and MaxWait shape each fetch request of a partition: the
	// broker answers once it has MinBytes (default 1) or after MaxWait (default
	// 500ms), with at most MaxBytes (default 10 MiB). MaxWait also bounds how long
	// closing a partition reader waits for a fetch in progress (kafka-go issue
	// #428), so keep it short.
	MinBytes int
	MaxBytes int
	MaxWait  time.Duration

	// QueueCapacity is how many messages kafka-go prefetches ahead of the handlers,
	// for each assigned partition. Default 100. Prefetched messages that were never
	// handled are not committed.
	QueueCapacity int

	// CommitInterval and CommitBatch batch the offset commits: the offsets of
	// handled messages are committed as soon as CommitBatch of them (default 100)
	// wait for a commit, and otherwise every CommitInterval (default 1s). Commits run
	// beside the handlers, never in their way; CommitBatch = 1 commits as often as
	// the commit round trip allows. Drain, and every rebalance that takes partitions
	// away, always commit synchronously what was handled, so batching only widens
	// what a crash delivers again.
	CommitInterval time.Duration
	CommitBatch    int

	// Workers is how many handlers run at once, across the assigned partitions.
	// Each partition is read and handled by its own goroutine, one message at a
	// time in offset order, whatever Workers says; Workers only bounds how many
	// partitions are in their handler at the same moment. Default 1: the handler
	// is never called concurrently. Set it to the partition count (or more) to
	// handle every assigned partition in parallel.
	Workers int

	// Retry says how often a failing message is tried before OnFailure applies.
	Retry Retry

	// Outage says how a dependency outage is told from a poison message, and how a
	// partition paused on an outage retries. See Outage.
	Outage Outage

	// OnFailure is what happens to a message whose attempts are exhausted (or whose
	// handler returned ErrUndecodable or a fault.Permanent error): DeadLetter(topic)
	// or StopEntrypoint(), the default.
	OnFailure FailurePolicy

	// DialTimeout bounds each broker dial: the reachability checks of Bind and
	// Health, and the connections of the group and of the partition readers.
	// Default 5s.
	DialTimeout time.Duration

	// CloseTimeout bounds the wait for kafka-go's ConsumerGroup.Close, which ends
	// the generation and leaves the group, and which can hang on a broker that does
	// not answer (a join in progress waits up to RebalanceTimeout). A Close that
	// takes longer is abandoned and logged; the group notices when the session
	// times out. Default 5s.
	CloseTimeout time.Duration

	// HeartbeatInterval is how often the member tells the group coordinator it is
	// alive; it is also how soon it learns that a rebalance began, and so how long
	// a rebalance waits for it. Default 1s; it must be less than SessionTimeout.
	HeartbeatInterval time.Duration

	// SessionTimeout is how long the coordinator waits without a heartbeat before
	// it considers the member dead and gives its partitions to the others: the
	// pause a crashed replica costs its partitions. Default 10s. Brokers refuse
	// values outside their group.min/max.session.timeout.ms (6s to 30min by default).
	SessionTimeout time.Duration

	// RebalanceTimeout is how long the coordinator waits for every member to
	// rejoin once a rebalance began; a member that does not is dropped from the
	// group. When a rebalance takes this member's partitions, its handlers in flight
	// get half of it to finish; then their ctx is cancelled (they are abandoned a
	// second later if they ignore it), their messages stay uncommitted, and the
	// member commits and rejoins in time. Default 30s.
	RebalanceTimeout time.Duration

	// AutoCreateTopics makes Bind create missing topics (the consumed ones and the
	// dead-letter topic) with the broker's default partitions and replication,
	// instead of failing.
	AutoCreateTopics bool
}

// Retry is the retry schedule for a failing message. The wait before retry n is
// drawn uniformly from [step/2, step], where step starts at Initial and doubles up
// to Max, so replicas that fail together do not retry together.
type Retry struct {
	// Attempts is how many times the handler is called for one message, the first
	// call included. Default 3; 1 means no retry.
	Attempts int
	// Initial is the first step. Default 100ms.
	Initial time.Duration
	// Max caps the step. Default 5s, or Initial when that is larger.
	Max time.Duration
}

// FailurePolicy says what happens to a message the handler could not handle. The
// zero value is StopEntrypoint.
type FailurePolicy struct {
	deadLetter bool
	topic      string
}

// DeadLetter writes a failed message to topic — key, value and headers as they came,
// plus headers saying where it came from and why it failed (DeadLetterInfo, which a
// reader of topic gets with ParseDeadLetter) — and then commits past it, so the
// partition moves on.
func DeadLetter(topic string) FailurePolicy { return FailurePolicy{deadLetter: true, topic: topic} }

// StopEntrypoint makes the entrypoint fail: Serve (or Drain, once Serve has
// returned) returns a *HandlerError and the message's offset is not committed, so
// the group delivers it again after the service restarts. The Host shuts an
// essential entrypoint's service down with exit code 1.
func StopEntrypoint() FailurePolicy { return FailurePolicy{} }

// DeadLetterTopic returns the dead-letter topic, or "" for StopEntrypoint.
func (p FailurePolicy) DeadLetterTopic() string { return p.topic }

func (p FailurePolicy) String() string {
	if p.deadLetter {
		return "DeadLetter(" + strconv.Quote(p.topic) + ")"
	}
	return "StopEntrypoint"
}

// resolve fills in the defaults and records every problem in l, each under its
// field's name.
func (c Config) resolve(l *fault.Problems) Config {
	c.Name = cmp.Or(c.Name, defaultName)
	c.StartOffset = cmp.Or(c.StartOffset, kafka.FirstOffset)
	c.MinBytes = cmp.Or(c.MinBytes, defaultMinBytes)
	c.MaxBytes = cmp.Or(c.MaxBytes, defaultMaxBytes)
	c.MaxWait = cmp.Or(c.MaxWait, defaultMaxWait)
	c.QueueCapacity = cmp.Or(c.QueueCapacity, defaultQueueCapacity)
	c.CommitInterval = cmp.Or(c.CommitInterval, defaultCommitInterval)
	c.CommitBatch = cmp.Or(c.CommitBatch, defaultCommitBatch)
	c.Workers = cmp.Or(c.Workers, defaultWorkers)
	c.DialTimeout = cmp.Or(c.DialTimeout, defaultDialTimeout)
	c.CloseTimeout = cmp.Or(c.CloseTimeout, defaultCloseTimeout)
	c.HeartbeatInterval = cmp.Or(c.HeartbeatInterval, defaultHeartbeatInterval)
	c.SessionTimeout = cmp.Or(c.SessionTimeout, defaultSessionTimeout)
	c.RebalanceTimeout = cmp.Or(c.RebalanceTimeout, defaultRebalanceTimeout)
	c.Retry.Attempts = cmp.Or(c.Retry.Attempts, defaultRetryAttempts)
	c.Retry.Initial = cmp.Or(c.Retry.Initial, defaultRetryInitial)
	c.Retry.Max = cmp.Or(c.Retry.Max, max(defaultRetryMax, c.Retry.Initial))
	c.Brokers = slices.Clone(c.Brokers)
	c.Topics = slices.Clone(c.Topics)

	if len(c.Brokers) == 0 {
		l.Addf("Brokers", "must list at least one broker")
	}
	for i, b := range c.Brokers {
		// The entry is not echoed: a broker list may carry credentials.
		if reason := kafkakit.CheckBroker(b); reason != "" {
			l.Addf("Brokers["+strconv.Itoa(i)+"]", "%s", reason)
		}
	}
	if c.GroupID == "" {
		l.Addf("GroupID", "must not be empty")
	}
	if len(c.Topics) == 0 {
		l.Addf("Topics", "must list at least one topic")
	}
	for i, t := range c.Topics {
		if err := checkTopic(t); err != "" {
			l.Addf("Topics["+strconv.Itoa(i)+"]", "%q: %s", t, err)
		} else if slices.Index(c.Topics, t) < i {
			l.Addf("Topics["+strconv.Itoa(i)+"]", "%q is listed twice", t)
		}
	}
	if c.StartOffset != kafka.FirstOffset && c.StartOffset != kafka.LastOffset {
		l.Addf("StartOffset", "must be kafka.FirstOffset (-2) or kafka.LastOffset (-1), got %d", c.StartOffset)
	}
	for _, f := range []struct {
		field string
		v     int
	}{
		{"MinBytes", c.MinBytes}, {"MaxBytes", c.MaxBytes}, {"QueueCapacity", c.QueueCapacity},
		{"CommitBatch", c.CommitBatch}, {"Workers", c.Workers}, {"Retry.Attempts", c.Retry.Attempts},
	} {
		if f.v < 0 {
			l.Addf(f.field, "must not be negative, got %d", f.v)
		}
	}
	if c.MinBytes > c.MaxBytes && c.MaxBytes > 0 {
		l.Addf("MinBytes", "must not exceed MaxBytes (%d), got %d", c.MaxBytes, c.MinBytes)
	}
	for _, f := range []struct {
		field string
		v     time.Duration
	}{
		{"MaxWait", c.MaxWait}, {"CommitInterval", c.CommitInterval}, {"DialTimeout", c.DialTimeout},
		{"CloseTimeout", c.CloseTimeout}, {"Retry.Initial", c.Retry.Initial}, {"Retry.Max", c.Retry.Max},
		{"HeartbeatInterval", c.HeartbeatInterval}, {"SessionTimeout", c.SessionTimeout},
		{"RebalanceTimeout", c.RebalanceTimeout},
	} {
		if f.v < 0 {
			l.Addf(f.field, "must not be negative, got %v", f.v)
		}
	}
	if c.HeartbeatInterval > 0 && c.SessionTimeout > 0 && c.HeartbeatInterval >= c.SessionTimeout {
		l.Addf("HeartbeatInterval", "must be less than SessionTimeout (%v), got %v", c.SessionTimeout, c.HeartbeatInterval)
	}
	// kafka-go sends these in milliseconds as int32.
	for _, f := range []struct {
		field string
		v     time.Duration
	}{{"SessionTimeout", c.SessionTimeout}, {"RebalanceTimeout", c.RebalanceTimeout}} {
		if f.v/time.Millisecond >= math.MaxInt32 {
			l.Addf(f.field, "must be less than %v, got %v", time.Duration(math.MaxInt32)*time.Millisecond, f.v)
		}
	}
	var ol fault.Problems
	c.Outage = c.Outage.resolve(&ol)
	l.Merge("Outage", ol.Err())
	if c.Retry.Initial > 0 && c.Retry.Max > 0 && c.Retry.Max < c.Retry.Initial {
		l.Addf("Retry.Max", "must be at least Retry.Initial (%v), got %v", c.Retry.Initial, c.Retry.Max)
	}
	if c.OnFailure.deadLetter {
		switch t := c.OnFailure.topic; {
		case t == "":
			l.Addf("OnFailure", "DeadLetter needs a topic")
		case checkTopic(t) != "":
			l.Addf("OnFailure", "dead-letter topic %q: %s", t, checkTopic(t))
		case slices.Contains(c.Topics, t):
			l.Addf("OnFailure", "dead-letter topic %q is also consumed; failures would loop", t)
		}
	}
	return c
}

// checkTopic returns what is wrong with a topic name by Kafka's rules, or "".
func checkTopic(t string) string {
	switch {
	case t == "":
		return "must not be empty"
	case t == "." || t == "..":
		return `must not be "." or ".."`
	case len(t) > 249:
		return "must not be longer than 249 characters"
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return "may hold only ASCII letters, digits, '.', '_' and '-'"
		}
	}
	return ""
}
