package fault_test

import (
	"strings"
	"testing"

	"github.com/servicewright/servicewright/fault"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://:s3cret@localhost:6379/0", "redis://:xxxxx@localhost:6379/0"},
		{"redis://user:s3cret@localhost:6379", "redis://user:xxxxx@localhost:6379"},
		{"postgres://app:s3cret@db:5432/orders?sslmode=disable", "postgres://app:xxxxx@db:5432/orders?sslmode=disable"},
		{"host=db user=app password=s3cret dbname=orders", "host=db user=app password=xxxxx dbname=orders"},
		{"host=db password='s3 cret' dbname=orders", "host=db password=xxxxx dbname=orders"},
		{"alice:s3cret@broker-1:9092,broker-2:9092", "alice:xxxxx@broker-1:9092,broker-2:9092"},
		{"redis://user:s3cret@local host:bad", "redis://user:xxxxx@local host:bad"},
		{"broker-1:9092,broker-2:9092", "broker-1:9092,broker-2:9092"},
		{"redis://localhost:6379", "redis://localhost:6379"},
		{"", ""},
	} {
		got := fault.Redact(tc.in)
		if got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "s3") {
			t.Errorf("Redact(%q) = %q still holds the secret", tc.in, got)
		}
	}
}
