package kafkakit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// defaultCheckTimeout bounds each broker dial and request of a BrokerCheck.
const defaultCheckTimeout = 5 * time.Second

// ErrBrokersUnreachable is wrapped by a BrokerCheck's error when no broker answered.
var ErrBrokersUnreachable = errors.New("kafkakit: no broker reachable")

// BrokerCheck is a readiness check of a Kafka cluster: its Health dials every broker
// at once and succeeds as soon as one answers an ApiVersions request. It fits
// health.Check. Make one with Check.
type BrokerCheck struct {
	brokers []string
	timeout time.Duration
	dialer  *kafka.Dialer
}

// Check returns a check of brokers whose every dial and request is bounded by
// timeout (5s when 0). WithDialer sets TLS or SASL; other options
// are ignored.
func Check(brokers []string, timeout time.Duration, opts ...Option) *BrokerCheck {
	o := newOptions(opts)
	if timeout <= 0 {
		timeout = defaultCheckTimeout
	}
	d := &kafka.Dialer{DualStack: true, ClientID: "servicewright"}
	if o.dialer != nil {
		dd := *o.dialer
		d = &dd
	}
	d.Timeout = timeout
	return &BrokerCheck{brokers: slices.Clone(brokers), timeout: timeout, dialer: d}
}

// Health returns nil once a broker answered, or an error wrapping
// ErrBrokersUnreachable that lists each broker's failure. It returns soon after
// ctx is done, and leaves no goroutine behind.
func (c *BrokerCheck) Health(ctx context.Context) error {
	_, err := c.Reachable(ctx)
	return err
}

// Reachable is Health that also returns the address of the broker that answered.
func (c *BrokerCheck) Reachable(ctx context.Context) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		addr string
		err  error
	}
	results := make(chan result, len(c.brokers))
	var wg sync.WaitGroup
	for _, addr := range c.brokers {
		wg.Go(func() { results <- result{addr, c.probe(ctx, addr)} })
	}
	var errs []error
	found := ""
	for range c.brokers {
		r := <-results
		if r.err == nil && found == "" {
			found = r.addr
			cancel()
		} else if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.addr, r.err))
		}
	}
	wg.Wait()
	if found != "" {
		return found, nil
	}
	return "", fmt.Errorf("%w: %w", ErrBrokersUnreachable, errors.Join(errs...))
}

// probe dials addr and asks for its API versions, all within the timeout and ctx.
func (c *BrokerCheck) probe(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := c.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	// kafka-go's Conn ignores ctx once dialled: a deadline bounds the request and
	// closing the connection ends it early when ctx is cancelled.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if _, err := conn.ApiVersions(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return nil
}

// CheckBroker returns what is wrong with a "host:port" broker address, or "". The
// address itself is not repeated in the reason, since a broker list may carry
// credentials.
func CheckBroker(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "must be host:port"
	}
	if host == "" {
		return "host must not be empty"
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "port must be a number from 1 to 65535"
	}
	return ""
}
