package cronentry_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/servicewright/servicewright/entrypoint/cronentry"
	"github.com/servicewright/servicewright/lock"
)

// A "report" job every 10ms, once per fleet: two replicas share a lock, and each
// tick runs on one of them. Serve returns at stop with the schedule still running;
// Drain ends it and waits for the run in progress; Stop cancels what is left.
func Example() {
	lk := lock.NewMemory() // a rediskit.Lock or pgkit.Lock across processes
	var (
		mu   sync.Mutex
		runs = map[time.Time]int{}
		six  = make(chan struct{})
	)
	report := func(ctx context.Context, t cronentry.Tick) error {
		mu.Lock()
		defer mu.Unlock()
		runs[t.Scheduled]++
		if len(runs) == 6 {
			close(six)
		}
		return nil
	}

	var replicas []*cronentry.Scheduler
	for _, owner := range []string{"replica-1", "replica-2"} {
		s, err := cronentry.New(cronentry.Config{Name: "cron"}, []cronentry.Job{{
			Name:         "report",
			Every:        10 * time.Millisecond,
			Jitter:       2 * time.Millisecond,
			OncePerFleet: cronentry.OncePerFleet(lk, owner, time.Second),
			Run:          report,
		}})
		if err != nil {
			fmt.Println(err)
			return
		}
		replicas = append(replicas, s)
	}
	fmt.Printf("register with %+v\n", replicas[0].Marks())

	stop := make(chan struct{})
	var served sync.WaitGroup
	for _, s := range replicas {
		if err := s.Bind(context.Background()); err != nil {
			fmt.Println(err)
			return
		}
		served.Go(func() {
			if err := s.Serve(context.Background(), stop); err != nil {
				fmt.Println("Serve:", err)
			}
		})
	}
	<-six
	close(stop)
	served.Wait()

	for _, s := range replicas {
		drain, cancel := context.WithTimeout(context.Background(), time.Second)
		fmt.Println("drain:", s.Drain(drain))
		cancel()
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		fmt.Println("stop:", s.Stop(stopCtx))
		cancel()
	}
	mu.Lock()
	defer mu.Unlock()
	twice := 0
	for _, n := range runs {
		if n > 1 {
			twice++
		}
	}
	fmt.Println("ticks run on both replicas:", twice)
	// Output:
	// register with {MutatesSharedState:true SingletonGuarded:true RequiresLongRunning:true}
	// drain: <nil>
	// stop: <nil>
	// drain: <nil>
	// stop: <nil>
	// ticks run on both replicas: 0
}
