package testenv

import (
	"context"
	"slices"
	"sync"
)

// Reports is a fault.Reporter that keeps what it is given, for the tests that check
// what an entrypoint reports. Its zero value is ready; it is safe for concurrent use.
type Reports struct {
	mu   sync.Mutex
	errs []error
	tags []map[string]string
}

// Report keeps err and tags.
func (r *Reports) Report(_ context.Context, err error, tags map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs, r.tags = append(r.errs, err), append(r.tags, tags)
}

// Flush does nothing: nothing is queued.
func (r *Reports) Flush(context.Context) error { return nil }

// Get returns the errors reported so far and their tags, in order.
func (r *Reports) Get() ([]error, []map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs), slices.Clone(r.tags)
}
