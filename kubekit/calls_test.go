package kubekit

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestCallOrder checks, on client-go's fake clientset (which keeps no
// resourceVersion conflicts, so it says nothing of exclusion: the apiserver tests
// do), which requests each operation sends: a renewal is one update from the
// version the holder wrote, with no read; a campaign against a held Lease is one
// read.
func TestCallOrder(t *testing.T) {
	c := fake.NewClientset()
	lk := newLock(t, c, "default")
	ctx := context.Background()
	calls := func() []string {
		var out []string
		for _, a := range c.Actions() {
			out = append(out, a.GetVerb())
		}
		c.ClearActions()
		return out
	}
	l, err := lk.Acquire(ctx, "k", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls(); !slices.Equal(got, []string{"get", "create", "update"}) {
		t.Fatalf("first acquire sent %v, want get, create, update", got)
	}
	if err := lk.Renew(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := calls(); !slices.Equal(got, []string{"update"}) {
		t.Fatalf("renew sent %v, want one update", got)
	}
	if _, err := lk.Acquire(ctx, "k", "b", time.Minute); err == nil {
		t.Fatal("a second owner acquired a held lease")
	}
	if got := calls(); !slices.Equal(got, []string{"get"}) {
		t.Fatalf("a campaign against a held lease sent %v, want one get", got)
	}
	if err := lk.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	got := calls()
	if !slices.Equal(got, []string{"update"}) {
		t.Fatalf("release sent %v, want one update", got)
	}
}
