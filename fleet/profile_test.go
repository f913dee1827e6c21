package fleet_test

import (
	"testing"

	"github.com/servicewright/servicewright/fleet"
)

// TestCheck: each profile refuses exactly the marks it names.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		p      fleet.Profile
		m      fleet.Marks
		refuse bool
	}{
		{fleet.Single, fleet.Marks{MutatesSharedState: true, RequiresLongRunning: true}, false},
		{fleet.Fleet, fleet.Marks{MutatesSharedState: true}, true},
		{fleet.Fleet, fleet.Marks{MutatesSharedState: true, SingletonGuarded: true}, false},
		{fleet.Fleet, fleet.Marks{RequiresLongRunning: true}, false},
		{fleet.Serverless, fleet.Marks{RequiresLongRunning: true}, true},
		{fleet.Serverless, fleet.Marks{MutatesSharedState: true}, false},
	} {
		if why := c.p.Check(c.m); (why != "") != c.refuse {
			t.Errorf("%v.Check(%+v) = %q, want refused %v", c.p, c.m, why, c.refuse)
		}
	}
}
