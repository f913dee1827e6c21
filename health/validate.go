package health

// The checks of a Monitor's configuration: timings, names and sources, each problem named.

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/servicewright/servicewright/fault"
)

// validateChecks records every unusable entry of checks. Names must be non-empty,
// without commas or surrounding spaces, so that ?exclude= can name each of them. A
// timing declared with Every must not be negative, and its timeout must be shorter
// than its interval, each taking timeout and interval (already defaulted) when zero.
func validateChecks(l *fault.Problems, checks map[string]Check, timeout, interval time.Duration) {
	for _, name := range slices.Sorted(mapKeys(checks)) {
		field := fmt.Sprintf("Checks[%q]", name)
		switch {
		case name == "":
			l.Addf(field, "name must not be empty")
		case strings.Contains(name, ","):
			l.Addf(field, "name must not contain a comma (?exclude= could not name it)")
		case strings.TrimSpace(name) != name:
			l.Addf(field, "name must not begin or end with a space")
		}
		c := checks[name]
		if isNil(c) {
			l.Addf(field, "must not be nil")
			continue
		}
		d := declarationOf(c)
		if d.interval < 0 {
			l.Addf(field+".Interval", "must not be negative, got %s (0 keeps CheckInterval)", d.interval)
		}
		if d.timeout < 0 {
			l.Addf(field+".Timeout", "must not be negative, got %s (0 keeps CheckTimeout)", d.timeout)
		}
		t, i := cmp.Or(d.timeout, timeout), cmp.Or(d.interval, interval)
		if d.interval >= 0 && d.timeout >= 0 && (d.interval > 0 || d.timeout > 0) && t >= i {
			l.Addf(field+".Timeout", "%s must be shorter than the check's interval, %s", t, i)
		}
	}
}

// validateTiming records a negative CheckTimeout or CheckInterval, and a timeout not
// shorter than the interval (after defaults), and returns both defaulted.
func validateTiming(l *fault.Problems, timeout, interval time.Duration) (time.Duration, time.Duration) {
	validateTimeout(l, timeout)
	if interval < 0 {
		l.Addf("CheckInterval", "must not be negative, got %s (leave it 0 for the default, %s)", interval, defaultCheckInterval)
	}
	timeout, interval = cmp.Or(max(timeout, 0), defaultCheckTimeout), cmp.Or(max(interval, 0), defaultCheckInterval)
	if timeout >= interval {
		l.Addf("CheckTimeout", "%s must be shorter than CheckInterval, %s: a check runs one at a time", timeout, interval)
	}
	return timeout, interval
}

func validateTimeout(l *fault.Problems, d time.Duration) {
	if d < 0 {
		l.Addf("CheckTimeout", "must be positive, got %s (leave it 0 for the default, %s)", d, defaultCheckTimeout)
	}
}

func validateSource(l *fault.Problems, src Source) {
	if isNil(src) {
		l.Addf("Source", "must not be nil")
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// isNil reports whether v is nil or an interface holding a nil pointer, func or map.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
