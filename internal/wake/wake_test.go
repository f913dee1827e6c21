package wake

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHub(t *testing.T) {
	var h Hub
	a, removeA, first := h.Add("k", "a")
	if !first {
		t.Fatal("first watcher not reported first")
	}
	b, removeB, first := h.Add("k", "b")
	if first {
		t.Fatal("second watcher reported first")
	}
	h.Notify("k", "a")
	select {
	case <-a:
		t.Fatal("a told of its own release")
	default:
	}
	h.Notify("k", "c") // merged into b's pending notice
	h.Notify("other", "c")
	<-a
	select {
	case <-b:
	default:
		t.Fatal("b not told")
	}
	select {
	case <-b:
		t.Fatal("notices not merged")
	default:
	}
	if removeA() {
		t.Fatal("a's removal left no watcher, but b remains")
	}
	if removeA() {
		t.Fatal("a's second removal left no watcher, but b remains")
	}
	if !removeB() {
		t.Fatal("b's removal did not report the last watcher")
	}
	if h.Len() != 0 || len(h.Keys()) != 0 {
		t.Fatalf("keys left: %v", h.Keys())
	}
}
