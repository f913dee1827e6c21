package kubekit

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/servicewright/servicewright/internal/lockarg"
)

// rewatchDelay is the pause before a watch the apiserver ended (its timeout, a
// restart, a refusal) is started again.
const rewatchDelay = 200 * time.Millisecond

// WatchReleases implements lock.Notifier. Each watched key has one watch on its
// Lease (a field selector on its name), made at the key's first watcher and
// stopped with its last. A modification that leaves the Lease without a holder,
// with the released-by annotation naming an owner other than self, sends a notice.
// A watch the apiserver ends is started again; notices meanwhile are lost, which
// the watcher's polling covers.
func (k *Lock) WatchReleases(ctx context.Context, key, self string) (<-chan struct{}, func(), error) {
	if err := lockarg.Key(key); err != nil {
		return nil, nil, err
	}
	k.watch.Lock()
	defer k.watch.Unlock()
	notices, remove, first := k.hub.Add(key, self)
	if first {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go k.watchKey(wctx, key, done)
		k.watches[key] = func() { cancel(); <-done }
	}
	stop := func() {
		k.watch.Lock()
		defer k.watch.Unlock()
		if !remove() {
			return
		}
		k.watches[key]()
		delete(k.watches, key)
	}
	return notices, stop, nil
}

// watchKey passes each release of key's Lease on to the key's watchers until ctx
// is done, then closes done.
func (k *Lock) watchKey(ctx context.Context, key string, done chan<- struct{}) {
	defer close(done)
	sel := fields.OneTermEqualSelector("metadata.name", leaseName(key)).String()
	for ctx.Err() == nil {
		w, err := k.leases.Watch(ctx, metav1.ListOptions{FieldSelector: sel})
		if err == nil {
			k.relay(ctx, key, w)
		}
		t := time.NewTimer(rewatchDelay)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// relay reads w until it ends or ctx is done.
func (k *Lock) relay(ctx context.Context, key string, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			l, isLease := ev.Object.(*coordinationv1.Lease)
			if ev.Type != watch.Modified || !isLease {
				continue
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
				if by := l.Annotations[annotationReleaser]; by != "" {
					k.hub.Notify(key, by)
				}
			}
		}
	}
}
