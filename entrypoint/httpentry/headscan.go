package httpentry

import "bytes"

// The field names headScan looks for, lower-case, with their colon.
const (
	contentLengthName    = "content-length:"
	transferEncodingName = "transfer-encoding:"
)

// A headVerdict is what headScan concluded of the head so far.
type headVerdict uint8

const (
	headOK           headVerdict = iota // nothing wrong yet
	headTooManyLines                    // more header fields than allowed: answer 431
	headBadFraming                      // Content-Length and Transfer-Encoding both: answer 400
)

// headScan follows the head of one HTTP/1 request as its bytes go by, without
// keeping them: it counts the head's lines and notes whether Content-Length and
// Transfer-Encoding are among its field names, so that a head with too many fields,
// or one whose body's length is ambiguous (RFC 9112 §6.3), can be refused before
// net/http parses it.
//
// A line ends at "\n" (net/http accepts a bare "\n" as well as "\r\n"); an empty
// line ("" or "\r") ends the head. Only the first bytes of a line that may name
// Content-Length or Transfer-Encoding are looked at one by one; the rest of each
// line is skipped with bytes.IndexByte. A folded line (obsolete, net/http joins it to the previous one)
// counts as a line of its own, which can only make the count larger.
//
// It does not parse the head: whatever else is wrong with it is net/http's to
// answer.
type headScan struct {
	lines     int                             // lines ended so far, the request line included
	start     [len(transferEncodingName)]byte // the current line's first bytes, lower-case
	startN    int                             // bytes in start
	past      bool                            // the current line is longer than start
	cl, te    bool                            // field names seen in this head
	maxFields int                             // header fields allowed, the request line not counted
}

// reset makes the scan ready for the next request's head.
func (s *headScan) reset() { *s = headScan{maxFields: s.maxFields} }

// scan reads b, the next bytes of the head, and returns the index in b just past
// the head's end, or -1 when the head goes on beyond b, with its verdict so far.
// On a verdict other than headOK the index means nothing.
func (s *headScan) scan(b []byte) (int, headVerdict) {
	i := 0
	for i < len(b) {
		// A line whose first byte starts neither name nor an empty line is skipped
		// whole; the others' first bytes are taken one by one, until the name is told
		// apart or the line ends.
		if s.startN == 0 && !s.past {
			if c := b[i] | 0x20; c != 'c' && c != 't' && b[i] != '\r' && b[i] != '\n' {
				s.past = true
			}
		}
		for !s.past && i < len(b) && b[i] != '\n' {
			if s.startN == len(s.start) {
				s.past = true
				break
			}
			c := b[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			s.start[s.startN] = c
			s.startN++
			i++
		}
		if i == len(b) {
			return -1, headOK
		}
		if b[i] != '\n' {
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				return -1, headOK
			}
			i += j
		}
		i++ // past the '\n'
		if v, ended := s.lineEnded(); v != headOK || ended {
			return i, v
		}
	}
	return -1, headOK
}

// lineEnded takes note of the line that just ended: whether it ends the head, and
// the verdict so far.
func (s *headScan) lineEnded() (headVerdict, bool) {
	line := s.start[:s.startN]
	empty := !s.past && (len(line) == 0 || len(line) == 1 && line[0] == '\r')
	if s.lines > 0 && !empty { // a field line: the first is the request line
		s.cl = s.cl || bytes.HasPrefix(line, []byte(contentLengthName))
		s.te = s.te || bytes.HasPrefix(line, []byte(transferEncodingName))
	}
	s.lines++
	s.startN, s.past = 0, false
	fields := s.lines - 1 // the request line is not a field
	if empty {
		fields-- // nor the line that ends the head
	}
	switch {
	case fields > s.maxFields:
		return headTooManyLines, false
	case empty && s.cl && s.te:
		return headBadFraming, true
	}
	return headOK, empty
}
