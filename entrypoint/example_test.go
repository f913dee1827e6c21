package entrypoint_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/servicewright/servicewright/entrypoint"
)

// A handler admits each request through the Gate; Drain closes the Gate and waits for
// the requests already admitted.
func ExampleGate() {
	var gate entrypoint.Gate
	var wg sync.WaitGroup
	started := make(chan struct{})
	finish := make(chan struct{})

	handle := func(id int) {
		leave, ok := gate.Enter()
		defer leave() // a no-op when refused
		if !ok {
			fmt.Printf("request %d refused: draining\n", id)
			return
		}
		close(started)
		<-finish
		fmt.Printf("request %d done\n", id)
	}

	wg.Go(func() { handle(1) })
	<-started

	// Drain: stop intake, then wait for what is in flight.
	gate.Close()
	handle(2)
	fmt.Println("in flight:", gate.InFlight())
	close(finish)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("wait:", gate.Wait(ctx))
	wg.Wait()
	// Output:
	// request 2 refused: draining
	// in flight: 1
	// request 1 done
	// wait: <nil>
}
