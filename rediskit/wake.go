package rediskit

import (
	"time"

	"github.com/redis/go-redis/v9"

	"context"
	"strings"

	"github.com/servicewright/servicewright/internal/lockarg"
)

// unsubscribeTimeout bounds the UNSUBSCRIBE of a key whose last watch stopped while
// other keys are still watched; a Redis that does not answer in time keeps sending
// the key's notices, which the dispatcher drops.
const unsubscribeTimeout = time.Second

// WatchReleases implements lock.Notifier. Every watch of a Lock shares one Redis
// subscription (one connection), made at the first watch and closed with the last;
// each key's channel is subscribed while the key has a watcher. A SUBSCRIBE that
// fails because Redis is unreachable is not an error: the client subscribes again
// when it reconnects, and notices sent meanwhile are lost, which the watcher's
// polling covers.
func (r *Lock) WatchReleases(ctx context.Context, key, self string) (<-chan struct{}, func(), error) {
	if err := lockarg.Key(key); err != nil {
		return nil, nil, err
	}
	ch := r.channel(key)
	r.watch.Lock()
	defer r.watch.Unlock()
	notices, remove, first := r.hub.Add(key, self)
	if r.ps == nil {
		r.ps = r.client.Subscribe(ctx)
		r.chans = map[string]string{}
		r.dispatch = make(chan struct{})
		go r.dispatchNotices(r.ps.Channel(), r.dispatch)
	}
	if first {
		r.chans[ch] = key
		_ = r.ps.Subscribe(ctx, ch) // recorded even when it fails; see above
	}
	stop := func() {
		r.watch.Lock()
		defer r.watch.Unlock()
		if !remove() {
			return
		}
		delete(r.chans, ch)
		if r.hub.Len() > 0 {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsubscribeTimeout)
			defer cancel()
			_ = r.ps.Unsubscribe(uctx, ch)
			return
		}
		_ = r.ps.Close() // closes the channel, which ends the dispatcher
		<-r.dispatch
		r.ps, r.chans, r.dispatch = nil, nil, nil
	}
	return notices, stop, nil
}

// dispatchNotices passes each release message on to the watchers of its key, until
// msgs is closed.
func (r *Lock) dispatchNotices(msgs <-chan *redis.Message, done chan<- struct{}) {
	defer close(done)
	for m := range msgs {
		key, ok := strings.CutPrefix(m.Channel, r.prefix+"{")
		if !ok {
			continue
		}
		key, ok = strings.CutSuffix(key, "}:released")
		if ok {
			r.hub.Notify(key, m.Payload)
		}
	}
}
