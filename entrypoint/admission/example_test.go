package admission_test

import (
	"errors"
	"fmt"

	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/fault"
)

// A Limiter starts at InitialLimit and moves with the latency it measures. A
// Config is checked whole: every problem names its field (and its variable, when
// the value came from one), so one run shows everything to fix.
func ExampleNew() {
	lim, err := admission.New(admission.Config{InitialLimit: 50})
	if err != nil {
		panic(err)
	}
	fmt.Println("limit:", lim.Limit())

	_, err = admission.New(admission.Config{MinLimit: 100, MaxLimit: 10, Window: -1})
	var ce *fault.ConfigError
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			fmt.Println("problem with", p.Field)
		}
	}
	// Output:
	// limit: 50
	// problem with MinLimit
	// problem with Window
}
