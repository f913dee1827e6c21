package cronentry

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/etcdkit"
	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/lock"
)

// TestOncePerFleetEtcd is TestOncePerFleetRedis on a 3-member etcd cluster.
func TestOncePerFleetEtcd(t *testing.T) {
	e, err := testenv.StartEtcd(3)
	testenv.Require(t, err)
	t.Cleanup(func() { _ = e.Stop() })
	oncePerFleetRolling(t, func(string) lock.Lock {
		c, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		lk, err := etcdkit.NewLock(c, etcdkit.LockConfig{KeyPrefix: "test/" + t.Name() + "/"})
		if err != nil {
			t.Fatal(err)
		}
		return lk
	})
}
