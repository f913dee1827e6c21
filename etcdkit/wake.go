package etcdkit

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/servicewright/servicewright/internal/lockarg"
)

// rewatchDelay is the pause before a watch that etcd ended (a compaction, a lost
// raft leader) is started again.
const rewatchDelay = 200 * time.Millisecond

// WatchReleases implements lock.Notifier. Each watched key has one etcd watch on its
// holder key, for deletes only, with the deleted value (to tell whose lease ended):
// made at the key's first watcher and cancelled with its last. A release or a
// lapse by another owner than self sends a notice. A watch the client cannot keep
// (etcd unreachable) is retried; notices meanwhile are lost, which the watcher's
// polling covers.
func (e *Lock) WatchReleases(ctx context.Context, key, self string) (<-chan struct{}, func(), error) {
	if err := lockarg.Key(key); err != nil {
		return nil, nil, err
	}
	e.watch.Lock()
	defer e.watch.Unlock()
	notices, remove, first := e.hub.Add(key, self)
	if first {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go e.watchKey(wctx, key, done)
		e.watches[key] = func() { cancel(); <-done }
	}
	stop := func() {
		e.watch.Lock()
		defer e.watch.Unlock()
		if !remove() {
			return
		}
		e.watches[key]()
		delete(e.watches, key)
	}
	return notices, stop, nil
}

// watchKey passes each delete of key's holder on to the key's watchers until ctx is
// done, then closes done.
func (e *Lock) watchKey(ctx context.Context, key string, done chan<- struct{}) {
	defer close(done)
	hk := e.holderKey(key)
	for ctx.Err() == nil {
		for resp := range e.client.Watch(clientv3.WithRequireLeader(ctx), hk, clientv3.WithFilterPut(), clientv3.WithPrevKV()) {
			for _, ev := range resp.Events {
				if ev.Type != clientv3.EventTypeDelete || ev.PrevKv == nil {
					continue
				}
				if owner, _, ok := parseValue(string(ev.PrevKv.Value)); ok {
					e.hub.Notify(key, owner)
				}
			}
		}
		t := time.NewTimer(rewatchDelay)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}
