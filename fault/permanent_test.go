package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/servicewright/servicewright/fault"
)

func TestPermanent(t *testing.T) {
	cause := errors.New("bad row")
	err := fmt.Errorf("order b7: %w", fault.Permanent(cause))
	if !fault.IsPermanent(err) || !errors.Is(err, cause) {
		t.Errorf("%v: want permanent, wrapping its cause", err)
	}
	if fault.IsPermanent(cause) || fault.IsPermanent(nil) || fault.Permanent(nil) != nil {
		t.Error("an unmarked error or nil is not permanent")
	}
}
