package fault

import (
	"fmt"
	"log/slog"
)

// mask is what a Secret prints instead of its value, "[secret]".
const mask = "[secret]"

// Secret is a string that never prints: fmt (every verb, %#v and %x included),
// encoding/json, encoding/text, zap (as a fmt.Stringer or through reflection) and
// log/slog all show "[secret]". Hold a credential the service reads from its environment
// in a Secret, and call Reveal only where the value is handed to the client that
// uses it.
//
// Secret does not stop code from converting it (string(s)) or from reading its
// bytes with reflection's String on the underlying kind; it keeps the value out of
// every formatting path, not out of reach.
type Secret string

// Reveal returns the value, for the one call that needs it (a client's options).
func (s Secret) Reveal() string { return string(s) }

// String returns "[secret]".
func (Secret) String() string { return mask }

// GoString returns "[secret]", for %#v.
func (Secret) GoString() string { return mask }

// Format writes "[secret]" for every verb, so that %x or %q cannot spell the value.
func (Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(mask)) }

// MarshalJSON returns "[secret]" as a JSON string.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + mask + `"`), nil }

// MarshalText returns "[secret]".
func (Secret) MarshalText() ([]byte, error) { return []byte(mask), nil }

// LogValue returns "[secret]", for log/slog.
func (Secret) LogValue() slog.Value { return slog.StringValue(mask) }
