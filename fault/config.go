package fault

import (
	"errors"
	"fmt"
	"strings"
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	// Field is the field or environment variable concerned, e.g.
	// "Budgets.DrainGrace" or "SW_DRAIN_DELAY". Nested configurations join their
	// field names with dots. It may be empty for a problem of the whole.
	Field string
	// Variable is the environment variable the value came from, e.g. "PROBE_ADDR"
	// for the field "Probes.Addr", when it was read from one; empty otherwise. A
	// user who set the variable finds it named even when the field is not.
	Variable string
	// Reason says what is wrong, e.g. "must be positive, got -1s". It never
	// carries a secret: values that may hold credentials are redacted first.
	Reason string
}

// String is "Field: Reason", or "VARIABLE (Field): Reason" when the value came from
// an environment variable.
func (p Problem) String() string {
	switch {
	case p.Variable != "" && p.Field != "" && p.Variable != p.Field:
		return p.Variable + " (" + p.Field + "): " + p.Reason
	case p.Variable != "":
		return p.Variable + ": " + p.Reason
	case p.Field == "":
		return p.Reason
	}
	return p.Field + ": " + p.Reason
}

// ConfigError lists every problem found in a configuration. Returned by a
// constructor, it means nothing was started; returned later — by a Bind after
// warmup, by an Acquire, by the Host at pre_start — it means what had started is
// being undone by the orderly exit. Either way retrying cannot fix it: the process
// exits 78. Use errors.As to reach it through wrapping.
type ConfigError struct {
	Problems []Problem
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid configuration (%d problem", len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteByte('s')
	}
	b.WriteString("): ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Invalid returns a *ConfigError with one problem: field and the formatted reason.
func Invalid(field, format string, args ...any) error {
	return &ConfigError{Problems: []Problem{{Field: field, Reason: fmt.Sprintf(format, args...)}}}
}

// Problems collects the problems of a configuration so that a constructor can report
// all of them at once. The zero value is empty and ready to use.
type Problems struct {
	list []Problem
}

// Addf records a problem with field.
func (l *Problems) Addf(field, format string, args ...any) {
	l.list = append(l.list, Problem{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// AddEnvf records a problem with field whose value came from the environment
// variable variable, so that the error names both: the field a reader of the code
// knows and the variable the user set.
func (l *Problems) AddEnvf(field, variable, format string, args ...any) {
	l.list = append(l.list, Problem{Field: field, Variable: variable, Reason: fmt.Sprintf(format, args...)})
}

// Merge records the problems of err when it is a *ConfigError, prefixing each field
// with prefix (joined with a dot) and keeping its Variable; any other non-nil error is recorded under prefix.
func (l *Problems) Merge(prefix string, err error) {
	if err == nil {
		return
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		l.list = append(l.list, Problem{Field: prefix, Reason: err.Error()})
		return
	}
	for _, p := range ce.Problems {
		switch {
		case prefix == "":
		case p.Field == "":
			p.Field = prefix
		default:
			p.Field = prefix + "." + p.Field
		}
		l.list = append(l.list, p)
	}
}

// Len reports how many problems were recorded.
func (l *Problems) Len() int { return len(l.list) }

// Err returns a *ConfigError holding every recorded problem, or nil when there is none.
func (l *Problems) Err() error {
	if len(l.list) == 0 {
		return nil
	}
	return &ConfigError{Problems: append([]Problem(nil), l.list...)}
}
