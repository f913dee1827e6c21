package prestop

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/safe"
)

// MinTokenLen is the shortest token accepted, in bytes: 16 random characters
// (openssl rand -hex 16 gives 32) put guessing it out of reach.
const MinTokenLen = 16

// refusalLogEvery spaces the log lines of refused requests, so that a client
// hammering the probe port cannot flood the log; every refusal is counted.
const refusalLogEvery = 10 * time.Second

// Token is what a guarded path asks of a caller, and what it did with refusals. The
// token itself is never kept: only its digest, compared in constant time.
type Token struct {
	sum    [sha256.Size]byte // of the token; compared, never the token itself
	set    bool              // a token is configured; without one the path refuses everyone
	header string            // the request header that carries it

	mu         sync.Mutex
	lastLog    time.Time // of the last refusal logged
	suppressed int       // refusals since then, not logged
}

// ReadToken reads a credential from the variable env or from the file fileEnv names
// (a mounted Secret; surrounding white space is trimmed), through lookup; header is
// where requests carry it. A problem is recorded in l under the variable's name,
// without the value: a token shorter than MinTokenLen or longer than maxLen (the
// probe port's header limit allows no more), one that is not visible ASCII (a header
// could not carry it), both variables set, a file that cannot be read or is not a
// regular file of at most twice maxLen (safe.ReadFile: never a blocking open). None
// set, or a problem: a Token that refuses every request.
func ReadToken(lookup func(string) (string, bool), env, fileEnv, header string, maxLen int, l *fault.Problems) *Token {
	v, inline := lookup(env)
	file, fromFile := lookup(fileEnv)
	inline, fromFile = inline && v != "", fromFile && file != ""
	name := env
	switch {
	case inline && fromFile:
		l.Addf(env+", "+fileEnv, "set one or the other, not both")
		return &Token{}
	case fromFile:
		name = fileEnv
		b, err := safe.ReadFile(file, int64(2*maxLen))
		if err != nil {
			l.Addf(name, "cannot read the token file %q: %v", file, err)
			return &Token{}
		}
		v = string(b)
	case !inline:
		return &Token{}
	}
	v = strings.TrimSpace(v)
	switch {
	case len(v) < MinTokenLen:
		l.Addf(name, "the token must be at least %d bytes (e.g. openssl rand -hex 16), got %d",
			MinTokenLen, len(v))
		return &Token{}
	case len(v) > maxLen:
		l.Addf(name, "the token must be at most %d bytes, to fit the probe port's header limit, got %d",
			maxLen, len(v))
		return &Token{}
	case !sendable(v):
		l.Addf(name, "the token must be visible ASCII (no space, control character or non-ASCII byte): no HTTP header could carry it")
		return &Token{}
	}
	return &Token{sum: sha256.Sum256([]byte(v)), set: true, header: header}
}

// sendable reports whether v can be sent as a header value as it is: visible ASCII
// only, 0x21 to 0x7e.
func sendable(v string) bool {
	for i := range len(v) {
		if v[i] < 0x21 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// Set reports whether a token is configured.
func (t *Token) Set() bool { return t.set }

// Check returns "" when r carries the token, or why it is refused: "not_configured"
// (no token is set, so nobody is let in), "no_credential" or "wrong_credential". The
// comparison takes the same time whatever the value sent.
func (t *Token) Check(r *http.Request) string {
	got, ok := r.Header[t.header]
	switch {
	case !t.set:
		return "not_configured"
	case !ok || len(got) != 1 || got[0] == "":
		return "no_credential"
	}
	sum := sha256.Sum256([]byte(got[0]))
	if subtle.ConstantTimeCompare(sum[:], t.sum[:]) != 1 {
		return "wrong_credential"
	}
	return ""
}

// LogRefusal reports whether this refusal is to be logged, and how many were not
// logged since the last one: the first is, then one every 10 s.
func (t *Token) LogRefusal(now time.Time) (bool, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.lastLog.IsZero() && now.Sub(t.lastLog) < refusalLogEvery {
		t.suppressed++
		return false, 0
	}
	n := t.suppressed
	t.lastLog, t.suppressed = now, 0
	return true, n
}

// Clip bounds a caller-supplied string before it is logged.
func Clip(s string) string {
	const most = 256
	if len(s) > most {
		return s[:most] + "…"
	}
	return s
}
