package kubekit

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/servicewright/servicewright/lock"
)

// TestRoleSuffices applies the Role of testdata/k8s/leases-rbac.yaml, bound to a
// user, on the real apiserver: that user's lock then acquires, sweeps past keys
// (AcquireExpiring), renews, watches and releases, and the same user without the binding is refused with an error naming
// the permission.
func TestRoleSuffices(t *testing.T) {
	admin := clientFor(t, "admin", "system:masters")
	raw, err := os.ReadFile("../testdata/k8s/leases-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.Role
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var r rbacv1.Role
		if err := yaml.Unmarshal([]byte(doc), &r); err == nil && r.Kind == "Role" {
			role = &r
		}
	}
	if role == nil {
		t.Fatal("no Role in leases-rbac.yaml")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ns := "rbac-" + strconvNano()
	user := "orders-" + ns
	if _, err := admin.CoreV1().Namespaces().Create(ctx, namespace(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lk := newLock(t, clientFor(t, user), ns)
	if _, err := lk.Acquire(ctx, "k", "a", time.Minute); err == nil || !strings.Contains(err.Error(), "may not use leases") {
		t.Fatalf("Acquire before the Role = %v, want refused naming the permission", err)
	}
	role.Namespace = ns
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user, APIGroup: rbacv1.GroupName}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var l lock.Lease
	for deadline := time.Now().Add(10 * time.Second); ; { // the authorizer's cache catches up
		if l, err = lk.Acquire(ctx, "k", "a", time.Minute); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Acquire with the Role = %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := lk.AcquireExpiring(ctx, "tick", "a", time.Minute, 2*time.Minute); err != nil {
		t.Fatalf("AcquireExpiring (list and delete) with the Role = %v", err)
	}
	notices, stop, err := lk.WatchReleases(ctx, "k", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := lk.Renew(ctx, l); err != nil {
		t.Fatalf("Renew with the Role = %v", err)
	}
	// Repeat until a notice arrives: the watch may take a moment to be in place,
	// and a release before it is not announced, by design.
	for {
		if err := lk.Release(ctx, l); err != nil {
			t.Fatalf("Release with the Role = %v", err)
		}
		select {
		case <-notices:
			return
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no release notice through the watch the Role allows")
		}
		if l, err = lk.Acquire(ctx, "k", "a", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

func strconvNano() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
