package transport

import (
	"cmp"
	"slices"
	"sync"
)

// Streams holds the long-lived requests of a server (streaming RPCs, SSE, hijacked
// connections) that its Drain ends one by one, oldest first. Once a Drain took its
// snapshot the set is sealed: a stream that arrives later is still held, so that
// Stop finds it, but Add tells the caller to end it at once, as the drain would have.
// The zero Streams is empty and unsealed; it must not be copied after first use.
type Streams[T comparable] struct {
	mu     sync.Mutex
	seq    uint64
	m      map[T]uint64 // stream → registration order
	sealed bool
}

// Add holds st and reports true, or reports false when the set is sealed (st is held
// all the same).
func (s *Streams[T]) Add(st T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[T]uint64)
	}
	s.seq++
	s.m[st] = s.seq
	return !s.sealed
}

// Remove lets go of st, once it ended.
func (s *Streams[T]) Remove(st T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, st)
}

// Snapshot returns the streams held, oldest first; with seal set it seals the set.
func (s *Streams[T]) Snapshot(seal bool) []T {
	type entry struct {
		st  T
		seq uint64
	}
	s.mu.Lock()
	s.sealed = s.sealed || seal
	list := make([]entry, 0, len(s.m))
	for st, seq := range s.m {
		list = append(list, entry{st, seq})
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b entry) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]T, len(list))
	for i, e := range list {
		out[i] = e.st
	}
	return out
}
