package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/servicewright/servicewright/fault"
)

func TestProblems(t *testing.T) {
	t.Run("empty is nil", func(t *testing.T) {
		var p fault.Problems
		if err := p.Err(); err != nil {
			t.Fatalf("Err = %v, want nil", err)
		}
	})
	t.Run("every problem is kept, nested fields joined with dots", func(t *testing.T) {
		var inner fault.Problems
		inner.Addf("TTL", "must be positive, got %s", "-1s")
		inner.Addf("", "whole thing wrong")
		var p fault.Problems
		p.Addf("Name", "must not be empty")
		p.Merge("Leader", inner.Err())
		p.Merge("Plain", errors.New("boom"))
		p.Merge("Nil", nil)
		err := fmt.Errorf("building: %w", p.Err())
		var ce *fault.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("errors.As(%v) found no *ConfigError", err)
		}
		want := []fault.Problem{
			{Field: "Name", Reason: "must not be empty"},
			{Field: "Leader.TTL", Reason: "must be positive, got -1s"},
			{Field: "Leader", Reason: "whole thing wrong"},
			{Field: "Plain", Reason: "boom"},
		}
		if len(ce.Problems) != len(want) {
			t.Fatalf("Problems = %v, want %v", ce.Problems, want)
		}
		for i := range want {
			if ce.Problems[i] != want[i] {
				t.Errorf("Problems[%d] = %v, want %v", i, ce.Problems[i], want[i])
			}
		}
		if p.Len() != 4 {
			t.Errorf("Len = %d, want 4", p.Len())
		}
	})
}

func TestPanicErrorUnwrapsAnErrorValue(t *testing.T) {
	cause := errors.New("cause")
	err := error(&fault.PanicError{What: `hook "x"`, Value: cause})
	if !errors.Is(err, cause) {
		t.Fatalf("errors.Is(%v, cause) = false", err)
	}
	if got, want := err.Error(), `hook "x" panicked: cause`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func ExampleInvalid() {
	err := fault.Invalid("Port", "must be within 1..65535, got %d", 70000)
	fmt.Println(err)
	// Output: invalid configuration (1 problem): Port: must be within 1..65535, got 70000
}
