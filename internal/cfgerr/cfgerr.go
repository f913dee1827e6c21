// Package cfgerr is the one error type every package returns for misconfiguration.
// The host package exports it as host.ConfigError; packages below host return it from
// their constructors and Validate methods so the Host can gather every problem of a
// spec into one error.
package cfgerr

import (
	"errors"
	"fmt"
	"strings"
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	Field  string // the field or environment variable, e.g. "Budgets.DrainGrace" or "SW_DRAIN_DELAY"
	Reason string // what is wrong with it, e.g. "must be positive, got -1s"
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.Reason
	}
	return p.Field + ": " + p.Reason
}

// Error lists every problem found in a configuration. Nothing was started when it is
// returned.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
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

// List collects problems. The zero value is empty and ready to use.
type List struct {
	problems []Problem
}

// Addf records a problem with field.
func (l *List) Addf(field, format string, args ...any) {
	l.problems = append(l.problems, Problem{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// Merge records the problems of err when it is an *Error, prefixing each field with
// prefix (joined with a dot); any other non-nil error is recorded under prefix.
func (l *List) Merge(prefix string, err error) {
	if err == nil {
		return
	}
	var ce *Error
	if !errors.As(err, &ce) {
		l.problems = append(l.problems, Problem{Field: prefix, Reason: err.Error()})
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
		l.problems = append(l.problems, p)
	}
}

// Len reports how many problems were recorded.
func (l *List) Len() int { return len(l.problems) }

// Err returns an *Error holding every recorded problem, or nil when there is none.
func (l *List) Err() error {
	if len(l.problems) == 0 {
		return nil
	}
	return &Error{Problems: append([]Problem(nil), l.problems...)}
}
