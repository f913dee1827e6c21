package leader

import (
	"testing"
	"time"
)

func TestDbgGraceful(t *testing.T) {
	lk := NewRedisLock(newClient(t, env.Redis(t)))
	for range 5 {
		key := keyFor(t, "")
		var rs []*replica
		for _, owner := range []string{"a", "b", "c"} {
			var g termLog
			rs = append(rs, startReplica(t, rSpec(lk, key, owner), g.untilEnded))
		}
		waitFor(t, 5*time.Second, "leader", func() bool { return len(holders(rs)) == 1 })
		old := holders(rs)[0]
		b := time.Now()
		d := rs[old].shutdown()
		t.Logf("drain %v total shutdown %v", d, time.Since(b))
		gone := time.Now()
		waitFor(t, 3*time.Second, "new", func() bool { return len(holders(rs)) == 1 })
		t.Logf("new after %v", time.Since(gone))
	}
}
