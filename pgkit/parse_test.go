package pgkit

import (
	"errors"
	"strings"
	"testing"

	"github.com/servicewright/servicewright/fault"
)

func TestParseConfigNamesTheProblemNotTheValue(t *testing.T) {
	const pw = "s3cretpw"
	for _, tc := range []struct{ url, want string }{
		{"postgres://u:" + pw + "@db:x/orders", "port must be a number"},
		{"postgres://u:%zz" + pw + "@db/orders", "percent-escape"},
		{"postgres://u@db/orders?sslmode=bogus&password=" + pw, "sslmode must be"},
		{"postgres://u:" + pw + "@db/orders?connect_timeout=x", "not a number"},
		{"host=db password='" + pw, "quoted value is not terminated"},
		{"host=db " + pw + " dbname=orders", "not key=value"},
		{"host=db port=99999 password=" + pw, "port must be a number"},
		{"host=db password=" + pw + " sslrootcert=/nonexistent sslmode=verify-full", "TLS file"},
	} {
		_, err := ParseConfig("DATABASE_URL", tc.url)
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok || ce.Problems[0].Field != "DATABASE_URL" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%q) = %v, want a ConfigError naming DATABASE_URL saying %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("ParseConfig(%q) echoes the password: %v", tc.url, err)
		}
	}
	for _, url := range []string{"postgres://u:" + pw + "@[::1]:5432/db", "postgres://u:" + pw + "@h1:5432,h2:5432/db",
		"host=db user=u password='a " + pw + "' dbname=orders"} {
		if _, err := ParseConfig("DATABASE_URL", url); err != nil {
			t.Errorf("ParseConfig(%q) = %v, want none", url, err)
		}
	}
}
