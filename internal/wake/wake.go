// Package wake keeps the watchers of lock releases for the Lock implementations that
// announce them: who waits for which key, and a non-blocking notice to each.
package wake

import "sync"

// Hub is the set of watchers of one lock, by key. The zero value is ready to use.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[*sub]struct{}
}

type sub struct {
	self string
	ch   chan struct{}
}

// Add registers a watcher of key that ignores releases by self. It returns the
// notice channel (one pending notice; more are merged into it), a remove function
// that reports whether the key has no watcher left (safe to call more than once;
// only the first call counts), and whether this is the key's first watcher.
func (h *Hub) Add(key, self string) (notices <-chan struct{}, remove func() (last bool), first bool) {
	s := &sub{self: self, ch: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[string]map[*sub]struct{}{}
	}
	m := h.subs[key]
	if m == nil {
		m = map[*sub]struct{}{}
		h.subs[key] = m
	}
	first = len(m) == 0
	m[s] = struct{}{}
	var once sync.Once
	remove = func() (last bool) {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			delete(h.subs[key], s)
			if len(h.subs[key]) == 0 {
				delete(h.subs, key)
				last = true
			}
		})
		return last
	}
	return s.ch, remove, first
}

// Notify tells every watcher of key, except those whose self is owner, that owner
// released it. It never blocks.
func (h *Hub) Notify(key, owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[key] {
		if s.self == owner {
			continue
		}
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
}

// Keys returns the keys that have watchers, in no order.
func (h *Hub) Keys() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.subs))
	for k := range h.subs {
		keys = append(keys, k)
	}
	return keys
}

// Len returns how many keys have watchers.
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
