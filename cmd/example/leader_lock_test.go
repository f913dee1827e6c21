package main

import (
	"strings"
	"testing"
)

// TestLeaderLockKnob: LEADER_LOCK names a backend whose variable must be set, and a
// bad value or a missing variable is a ConfigError naming it (never echoing the
// endpoints).
func TestLeaderLockKnob(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"LEADER_LOCK": "zookeeper"}, "LEADER_LOCK"},
		{map[string]string{"LEADER_LOCK": "etcd"}, "ETCD_ENDPOINTS"},
		{map[string]string{"LEADER_LOCK": "redis"}, "REDIS_URL"},
		{map[string]string{"LEADER_LOCK": "postgres"}, "DATABASE_URL"},
		{map[string]string{"LEADER_LOCK": "etcd", "ETCD_ENDPOINTS": "http://root:s3cret@etcd"}, "ETCD_ENDPOINTS"},
	} {
		t.Run("LEADER_LOCK="+c.env["LEADER_LOCK"]+" names "+c.want, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, err := readKnobs()
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("got %v, want a ConfigError naming %s, without the endpoints", err, c.want)
			}
		})
	}
	t.Setenv("LEADER_LOCK", "etcd")
	t.Setenv("ETCD_ENDPOINTS", "http://127.0.0.1:2379,http://127.0.0.1:22379")
	if k, err := readKnobs(); err != nil || k.leaderLock != "etcd" {
		t.Fatalf("LEADER_LOCK=etcd with endpoints: %q, %v", k.leaderLock, err)
	}
}
