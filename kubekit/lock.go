package kubekit

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/lockarg"
	"github.com/servicewright/servicewright/internal/wake"
	"github.com/servicewright/servicewright/lock"
)

var (
	_ lock.Lock         = (*Lock)(nil)
	_ lock.Notifier     = (*Lock)(nil)
	_ lock.ReleaseBound = (*Lock)(nil)
	_ lock.Expiring     = (*Lock)(nil)
)

// The annotations a Lock keeps on each Lease, beside spec.holderIdentity (the owner),
// and the label of the Leases it may delete: what kubectl shows of a lock.
const (
	annotationKey      = "servicewright.io/lock-key" // the lock's name, as given
	annotationToken    = "servicewright.io/token"    // the current holding's fencing token
	annotationFence    = "servicewright.io/fence"    // the counter: the last token drawn, or the floor
	annotationTTL      = "servicewright.io/ttl-ms"   // the holding's TTL, exact
	annotationReleaser = "servicewright.io/released-by"
	// annotationExpires is when a Lease taken with AcquireExpiring may be deleted
	// (RFC 3339, the acquirer's clock); labelExpiring marks such Leases, so that a
	// sweep lists them alone.
	annotationExpires = "servicewright.io/expires-at"
	labelExpiring     = "servicewright.io/expiring"
)

// Lock is a lock.Lock on Kubernetes Leases (coordination.k8s.io/v1), one Lease per
// lock name in one namespace, named sw-, the name's lower-case letters and digits
// (up to 40), and a hash of the whole name (kubectl get leases shows them). Every change is an update that carries the
// resourceVersion last read, so of two writers that read the same version the
// apiserver accepts one and answers the other 409 Conflict:
//
//   - Acquire reads the Lease (creating it when absent). Free (no holder), it writes
//     the owner as spec.holderIdentity and counter+1 as both the token and the
//     counter annotations, in one update. Held, it is lock.ErrHeld — unless this
//     Lock has seen the same resourceVersion for at least the holding's TTL on its
//     own clock, in which case the holder has lapsed and the update takes it.
//   - Renew and Release update the Lease from the version the holder last wrote;
//     a conflict is read again, and the update retried only while the Lease still
//     names the same owner and token (another writer moved the counter); a Lease
//     taken by another is lock.ErrNotHeld. Release clears the holder and names the
//     releaser in an annotation, which WatchReleases (lock.Notifier) reads from a
//     watch on the Lease.
//
// The apiserver never expires a Lease: expiry is judged by each candidate, on its
// own monotonic clock, from when it first saw the holder's latest version — never
// from the times recorded in the Lease, which come from other machines' clocks. That
// moment is after the renewal that wrote the version was sent, so a Lease changes
// hands no earlier than TTL after the holder's last renewal was sent
// (EarliestRelease is ttl). A crashed holder's Lease passes after its TTL plus up
// to one campaign (a candidate must first see the version, then wait the TTL).
//
// Each key keeps its Lease (with its counter) in the namespace, unless it was taken
// with AcquireExpiring (lock.Expiring, what a once-per-fleet cron job uses): such a
// Lease is deleted by a later AcquireExpiring once its fenceTTL has passed (see
// expiring.go).
type Lock struct {
	leases    coordclient.LeaseInterface
	namespace string

	mu   sync.Mutex
	seen map[string]seen // by Lease name: the version seen and when first
	held map[string]held // by key: the version the holder last wrote

	watch   sync.Mutex
	hub     wake.Hub
	watches map[string]func()
}

type seen struct {
	rv      string
	at      time.Time
	expires time.Time // the Lease's annotationExpires; zero: none
}

type held struct {
	owner string
	token uint64
	obj   *coordinationv1.Lease // as the holder last wrote it
	// expires is when the Lease may be deleted, for a key taken with
	// AcquireExpiring; zero: never.
	expires time.Time
}

// LockConfig configures a Lock.
type LockConfig struct {
	// Namespace holds the Leases. Required (in a pod, the POD_NAMESPACE
	// environment variable from the downward API).
	Namespace string
}

// resolve records every problem with cfg in l under its field name. No field has a
// default.
func (cfg LockConfig) resolve(l *fault.Problems) LockConfig {
	if cfg.Namespace == "" {
		l.Addf("Namespace", "must not be empty: the namespace that holds the Leases")
	}
	return cfg
}

// NewLock returns a Lock on client's Leases in cfg.Namespace. It validates its
// arguments into a *fault.ConfigError naming each field, and sends nothing.
func NewLock(client kubernetes.Interface, cfg LockConfig) (*Lock, error) {
	var l fault.Problems
	if client == nil {
		l.Addf("client", "must not be nil")
	}
	cfg = cfg.resolve(&l)
	if err := l.Err(); err != nil {
		return nil, err
	}
	return &Lock{leases: client.CoordinationV1().Leases(cfg.Namespace), namespace: cfg.Namespace,
		seen: map[string]seen{}, held: map[string]held{}, watches: map[string]func(){}}, nil
}

// leaseName is the name of the Lease of the lock named key: a DNS subdomain made of
// the key's lower-case letters and digits (up to 40) and a hash of the whole key.
func leaseName(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		if b.Len() >= 40 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return "sw-" + strings.Trim(b.String(), "-") + "-" + strconv.FormatUint(h.Sum64(), 16)
}

// EarliestRelease implements lock.ReleaseBound: a candidate takes a Lease only after
// it has seen the holder's latest version unchanged for ttl on its own clock, and
// it sees that version only after the renewal that wrote it was sent.
func (k *Lock) EarliestRelease(ttl time.Duration) time.Duration { return ttl }

// state is what a Lock reads of a Lease.
type state struct {
	owner        string
	token, fence uint64
	ttl          time.Duration
	expires      time.Time // zero: the Lease is kept
}

func stateOf(l *coordinationv1.Lease) (state, error) {
	var s state
	a := l.Annotations
	if l.Spec.HolderIdentity != nil {
		s.owner = *l.Spec.HolderIdentity
	}
	parse := func(name string) (uint64, error) {
		v, ok := a[name]
		if !ok {
			return 0, nil
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("lease %s: annotation %s is %q, not a number", l.Name, name, v)
		}
		return n, nil
	}
	var err1, err2, err3 error
	s.token, err1 = parse(annotationToken)
	s.fence, err2 = parse(annotationFence)
	ms, err3 := parse(annotationTTL)
	s.ttl = time.Duration(ms) * time.Millisecond
	if v, ok := a[annotationExpires]; ok {
		s.expires, _ = time.Parse(time.RFC3339Nano, v) // unreadable: kept
	}
	if s.ttl == 0 && l.Spec.LeaseDurationSeconds != nil { // a Lease some other client holds
		s.ttl = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return s, errors.Join(err1, err2, err3)
}

// observe records that the Lease was seen at version rv now, unless it was seen at
// that version before, and returns how long it has been seen unchanged.
func (k *Lock) observe(name, rv string, expires time.Time) time.Duration {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.seen[name]
	if !ok || s.rv != rv {
		s = seen{rv: rv, at: now, expires: expires}
		k.seen[name] = s
	}
	return now.Sub(s.at)
}

// wrap names what is missing when the apiserver refuses a call.
func (k *Lock) wrap(op, key string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s %q: the client may not use leases.coordination.k8s.io in namespace %q (grant get, create, update and watch on leases in a Role; see package kubekit): %w", op, key, k.namespace, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s %q: the apiserver did not accept the client's credentials: %w", op, key, err)
	case apierrors.IsNotFound(err) && strings.Contains(err.Error(), "namespaces"):
		return fmt.Errorf("%s %q: namespace %q does not exist: %w", op, key, k.namespace, err)
	}
	return fmt.Errorf("%s %q: %w", op, key, err)
}

// get reads the Lease of key, creating a free one when there is none.
func (k *Lock) get(ctx context.Context, key string) (*coordinationv1.Lease, error) {
	name := leaseName(key)
	l, err := k.leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l, err = k.leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "servicewright"},
			Annotations: map[string]string{annotationKey: key, annotationFence: "0"}}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			l, err = k.leases.Get(ctx, name, metav1.GetOptions{})
		}
	}
	return l, err
}

// Acquire implements lock.Lock.
func (k *Lock) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (lock.Lease, error) {
	if err := lockarg.Acquire(key, owner, ttl); err != nil {
		return lock.Lease{}, err
	}
	return k.acquire(ctx, key, owner, ttl, 0)
}

// acquire takes key; a positive fenceTTL marks its Lease for deletion fenceTTL from
// now, 0 keeps it.
func (k *Lock) acquire(ctx context.Context, key, owner string, ttl, fenceTTL time.Duration) (lock.Lease, error) {
	l, err := k.get(ctx, key)
	if err != nil {
		return lock.Lease{}, k.wrap("acquire", key, err)
	}
	s, err := stateOf(l)
	if err != nil {
		return lock.Lease{}, k.wrap("acquire", key, err)
	}
	if s.owner != "" && k.observe(l.Name, l.ResourceVersion, s.expires) < s.ttl {
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, lock.ErrHeld)
	}
	if s.fence >= lock.MaxToken {
		return lock.Lease{}, fmt.Errorf("acquire %q: %w", key, lock.ErrFenceExhausted)
	}
	t := s.fence + 1
	l = l.DeepCopy()
	now := metav1.NowMicro()
	secs := int32((ttl + time.Second - 1) / time.Second)
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &owner, &secs
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	transitions := int32(1)
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions + 1
	}
	l.Spec.LeaseTransitions = &transitions
	var expires time.Time
	if fenceTTL > 0 {
		expires = time.Now().Add(fenceTTL)
	}
	setAnnotations(l, map[string]string{annotationToken: strconv.FormatUint(t, 10), annotationFence: strconv.FormatUint(t, 10),
		annotationTTL: strconv.FormatInt(ttl.Milliseconds(), 10), annotationReleaser: ""})
	setExpiry(l, expires)
	u, err := k.leases.Update(ctx, l, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return lock.Lease{}, fmt.Errorf("acquire %q: another writer was first: %w", key, lock.ErrHeld)
	case err != nil:
		return lock.Lease{}, k.wrap("acquire", key, err)
	}
	k.mu.Lock()
	k.held[key] = held{owner: owner, token: t, obj: u, expires: expires}
	k.mu.Unlock()
	return lock.Lease{Key: key, Owner: owner, Token: t, TTL: ttl}, nil
}

// setAnnotations sets each of m on l; an empty value removes the annotation.
func setAnnotations(l *coordinationv1.Lease, m map[string]string) {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	for k, v := range m {
		if v == "" {
			delete(l.Annotations, k)
		} else {
			l.Annotations[k] = v
		}
	}
}

// change updates lease's Lease with edit, from the version its holder last wrote,
// re-reading it on a conflict while it still names lease's owner and token.
func (k *Lock) change(ctx context.Context, op string, lease lock.Lease, edit func(*coordinationv1.Lease)) error {
	if err := lockarg.Lease(lease.Key, lease.Owner, lease.TTL, lease.Token); err != nil {
		return err
	}
	k.mu.Lock()
	h, ok := k.held[lease.Key]
	k.mu.Unlock()
	for {
		if !ok || h.owner != lease.Owner || h.token != lease.Token {
			l, err := k.leases.Get(ctx, leaseName(lease.Key), metav1.GetOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("%s %q token %d: %w", op, lease.Key, lease.Token, lock.ErrNotHeld)
				}
				return k.wrap(op, lease.Key, err)
			}
			s, err := stateOf(l)
			if err != nil {
				return k.wrap(op, lease.Key, err)
			}
			if s.owner != lease.Owner || s.token != lease.Token {
				if s.owner == lease.Owner {
					return fmt.Errorf("%s %q token %d: owner %q: %w: %w", op, lease.Key, lease.Token, lease.Owner, lock.ErrDuplicateOwner, lock.ErrNotHeld)
				}
				return fmt.Errorf("%s %q token %d: %w", op, lease.Key, lease.Token, lock.ErrNotHeld)
			}
			h, ok = held{owner: s.owner, token: s.token, obj: l, expires: s.expires}, true
		}
		l := h.obj.DeepCopy() // written from the version the holder holds
		edit(l)
		u, err := k.leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			ok = false // read it again
			continue
		}
		if err != nil {
			return k.wrap(op, lease.Key, err)
		}
		k.mu.Lock()
		if u.Spec.HolderIdentity != nil && *u.Spec.HolderIdentity != "" {
			k.held[lease.Key] = held{owner: lease.Owner, token: lease.Token, obj: u, expires: h.expires}
		} else {
			delete(k.held, lease.Key)
		}
		k.mu.Unlock()
		return nil
	}
}
