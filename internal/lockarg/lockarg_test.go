package lockarg

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/fault"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every bad argument is named, in the order of the arguments; good ones give nil.
func TestChecks(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want []string
	}{
		{"acquire, all bad", Acquire("", "", 0), []string{"key", "owner", "ttl"}},
		{"acquire, negative ttl", Acquire("k", "a", -time.Second), []string{"ttl"}},
		{"acquire, good", Acquire("k", "a", time.Second), nil},
		{"expiring, all bad", Expiring("", "", 0, 0), []string{"key", "owner", "ttl", "fenceTTL"}},
		{"expiring, no fence ttl", Expiring("k", "a", time.Second, 0), []string{"fenceTTL"}},
		{"expiring, good", Expiring("k", "a", time.Second, time.Minute), nil},
		{"lease, bad fields before the token", Lease("", "a", time.Second, 0), []string{"key"}},
		{"lease, no token", Lease("k", "a", time.Second, 0), []string{"lease.Token"}},
		{"lease, good", Lease("k", "a", time.Second, 1), nil},
		{"key, empty", Key(""), []string{"key"}},
		{"key, good", Key("k"), nil},
	} {
		var got []string
		if ce, ok := errors.AsType[*fault.ConfigError](c.err); ok {
			for _, p := range ce.Problems {
				got = append(got, p.Field)
			}
		} else if c.err != nil {
			t.Errorf("%s: %v (%T), want a *fault.ConfigError", c.name, c.err, c.err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: problems %v, want %v", c.name, got, c.want)
		}
	}
}
