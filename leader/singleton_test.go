package leader

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/lock"
	"github.com/servicewright/servicewright/rediskit"
)

func nop(context.Context) error { return nil }

func TestSingletonValidation(t *testing.T) {
	_, err := NewSingleton(SingletonConfig{}, nil, nil)
	ce, ok := errors.AsType[*fault.ConfigError](err)
	if !ok {
		t.Fatalf("err = %v, want *fault.ConfigError", err)
	}
	var fields []string
	for _, p := range ce.Problems {
		fields = append(fields, p.Field)
	}
	if fmt.Sprint(fields) != "[Lock Key Owner TTL start]" {
		t.Fatalf("problems %v", ce.Problems)
	}
	_, err = NewSingleton(SingletonConfig{Lock: lock.NewMemory(), Key: "migrate:want", Owner: "a", TTL: -time.Second}, nop, nil)
	if ce, ok = errors.AsType[*fault.ConfigError](err); !ok || len(ce.Problems) != 2 || ce.Problems[0].Field != "Key" || ce.Problems[1].Field != "TTL" {
		t.Fatalf("err = %v, want key and ttl refused", err)
	}
}

func TestSingleton(t *testing.T) {
	ctx := context.Background()

	t.Run("the replica that takes the lock runs start, releases, and later runs stop", func(t *testing.T) {
		lk := lock.NewMemory()
		var started, stopped atomic.Int32
		s, err := NewSingleton(SingletonConfig{Lock: lk, Key: "migrate", Owner: "a", TTL: time.Minute},
			func(context.Context) error { started.Add(1); return nil },
			func(context.Context) error { stopped.Add(1); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil || started.Load() != 1 || !s.Ran() {
			t.Fatalf("Start = %v, started %d", err, started.Load())
		}
		if h, _ := lk.Inspect(ctx, "migrate"); h.Held() {
			t.Fatal("lock held after start")
		}
		if err := s.Stop(ctx); err != nil || stopped.Load() != 1 {
			t.Fatalf("Stop = %v, stopped %d", err, stopped.Load())
		}
	})

	t.Run("a replica that finds the lock held skips start and stop", func(t *testing.T) {
		lk := lock.NewMemory()
		if _, err := lk.Acquire(ctx, "migrate", "other", time.Minute); err != nil {
			t.Fatal(err)
		}
		s, _ := NewSingleton(SingletonConfig{Lock: lk, Key: "migrate", Owner: "a", TTL: time.Minute},
			func(context.Context) error { t.Fatal("start ran"); return nil },
			func(context.Context) error { t.Fatal("stop ran"); return nil })
		if err := s.Start(ctx); err != nil || s.Ran() {
			t.Fatalf("Start = %v, ran %v", err, s.Ran())
		}
		if err := s.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("start's error is returned and the lock still released", func(t *testing.T) {
		lk := lock.NewMemory()
		boom := errors.New("boom")
		s, _ := NewSingleton(SingletonConfig{Lock: lk, Key: "migrate", Owner: "a", TTL: time.Minute}, func(context.Context) error { return boom }, nil)
		if err := s.Start(ctx); !errors.Is(err, boom) {
			t.Fatalf("Start = %v", err)
		}
		if h, _ := lk.Inspect(ctx, "migrate"); h.Held() {
			t.Fatal("lock held after a failed start")
		}
	})

	t.Run("a lock backend that fails is an error, not a skip", func(t *testing.T) {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
		defer c.Close()
		s, _ := NewSingleton(SingletonConfig{Lock: redisLock(t, c), Key: "migrate", Owner: "a", TTL: time.Minute}, nop, nil)
		if err := s.Start(ctx); err == nil || s.Ran() {
			t.Fatalf("Start = %v with Redis unreachable", err)
		}
	})
}

func TestSingletonAcrossReplicas(t *testing.T) {
	r := env.Redis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	lk := redisLock(t, c)
	key := "ensure-indexes-" + strconv.FormatInt(time.Now().UnixNano(), 36)

	const replicas = 5
	var (
		ran      atomic.Int32
		returned atomic.Int32
		others   = make(chan struct{}) // closed once the other replicas' Starts returned
		steps    []*SingletonStep
	)
	for i := range replicas {
		s, err := NewSingleton(SingletonConfig{Lock: lk, Key: key, Owner: fmt.Sprintf("replica-%d", i), TTL: 10 * time.Second}, func(ctx context.Context) error {
			ran.Add(1)
			// Hold the lock until every other replica has tried it, so that none
			// could find it released; give up after a while if two ever ran.
			select {
			case <-others:
			case <-time.After(5 * time.Second):
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, s)
	}
	var wg sync.WaitGroup
	for _, s := range steps {
		wg.Go(func() {
			if err := s.Start(context.Background()); err != nil {
				t.Error(err)
			}
			if returned.Add(1) == replicas-1 {
				close(others)
			}
		})
	}
	wg.Wait()
	if n := ran.Load(); n != 1 {
		t.Fatalf("start ran %d times across %d replicas, want exactly once", n, replicas)
	}
	n := 0
	for _, s := range steps {
		if s.Ran() {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d replicas report Ran", n)
	}
}

func TestMarks(t *testing.T) {
	step, err := NewSingleton(SingletonConfig{Lock: lock.NewMemory(), Key: "k", Owner: "a", TTL: time.Second}, nop, nil)
	if err != nil {
		t.Fatal(err)
	}
	if why := fleet.Fleet.Check(step.Marks()); why != "" || !step.Marks().MutatesSharedState {
		t.Fatalf("Fleet refuses a singleton-guarded step, or it does not mutate: %s", why)
	}
	if why := fleet.Fleet.Check(fleet.Marks{MutatesSharedState: true}); why == "" {
		t.Fatal("Fleet accepts an unguarded mutating step")
	}
}

func ExampleNewSingleton() {
	lk := lock.NewMemory() // rediskit.NewLock or pgkit.NewLock across replicas
	step, err := NewSingleton(SingletonConfig{Lock: lk, Key: "ensure-indexes", Owner: "replica-1", TTL: time.Minute},
		func(context.Context) error { fmt.Println("creating indexes"); return nil },
		nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Register as a warmup step: host.Step{Name: "ensure-indexes", Start: step.Start,
	// Stop: step.Stop, Marks: step.Marks()}.
	_ = step.Start(context.Background())
	fmt.Println("ran here:", step.Ran())
	// Output:
	// creating indexes
	// ran here: true
}

func redisLock(t *testing.T, c redis.UniversalClient) *rediskit.Lock {
	t.Helper()
	lk, err := rediskit.NewLock(c, rediskit.LockConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return lk
}
