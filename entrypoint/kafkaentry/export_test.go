package kafkaentry

import "context"

// Crash stops c the way a killed process stops, as far as its offsets go: nothing
// is committed any more — neither the batch due nor a generation's final commit —
// then it stops. Unlike a killed process it still leaves the group, so that the
// test need not wait out the session timeout. Stats().Uncommitted then tells how
// many handled messages the group delivers again.
func (c *Consumer) Crash(ctx context.Context) error {
	c.commitSem <- struct{}{} // a commit in progress finishes first, so that Uncommitted is exact
	c.crashed.Store(true)
	<-c.commitSem
	return c.Stop(ctx)
}

// Assigned returns how many partitions the generation in progress assigned to c.
func (c *Consumer) Assigned() int {
	c.base.Lock()
	defer c.base.Unlock()
	if c.gen == nil {
		return 0
	}
	return len(c.gen.gen.partitions())
}

// withDeadLetterWriter makes the dead-letter path write through w, a fake, instead
// of a producer of the consumer's own.
func withDeadLetterWriter(w messageWriter) Option {
	return func(o *options) { o.dlq = w }
}

// ErrUnknownTopic lets the tests of package kafkaentry_test tell a missing topic.
var ErrUnknownTopic = errUnknownTopic
