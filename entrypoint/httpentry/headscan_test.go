package httpentry

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// headFields returns n header lines "X-F<i>: v\r\n".
func headFields(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("X-F")
		b.WriteString(strings.Repeat("a", i%7))
		b.WriteString(": v\r\n")
	}
	return b.String()
}

// TestHeadScan: the head's end, its field count against the limit and the
// Content-Length/Transfer-Encoding pair are found whatever the reads' boundaries —
// each head is scanned whole, then cut in every place into two reads, and one byte
// at a time.
func TestHeadScan(t *testing.T) {
	const limit = 5
	for _, c := range []struct {
		name, head string
		want       headVerdict
	}{
		{"no fields", "GET / HTTP/1.1\r\n\r\n", headOK},
		{"at the limit", "GET / HTTP/1.1\r\n" + headFields(limit) + "\r\n", headOK},
		{"one over", "GET / HTTP/1.1\r\n" + headFields(limit+1) + "\r\n", headTooManyLines},
		{"bare LF at the limit", "GET / HTTP/1.1\n" + strings.ReplaceAll(headFields(limit), "\r\n", "\n") + "\n", headOK},
		{"bare LF over", "GET / HTTP/1.1\n" + strings.ReplaceAll(headFields(limit+1), "\r\n", "\n") + "\n", headTooManyLines},
		{"over, never ended", "GET / HTTP/1.1\r\n" + headFields(limit+1), headTooManyLines},
		{"content-length alone", "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n", headOK},
		{"transfer-encoding alone", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", headOK},
		{"both", "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", headBadFraming},
		{"both, any case, bare LF", "POST / HTTP/1.1\ntransfer-ENCODING: chunked\nCONTENT-length: 3\n\n", headBadFraming},
		{"names only alike", "POST / HTTP/1.1\r\nContent-Lengths: 3\r\nX-Transfer-Encoding: chunked\r\nTransfer-Encodings: x\r\n\r\n", headOK},
		{"values are not names", "POST / HTTP/1.1\r\nX-A: content-length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", headOK},
		{"long lines", "GET /" + strings.Repeat("p", 5000) + " HTTP/1.1\r\nCookie: " + strings.Repeat("c", 5000) + "\r\n\r\n", headOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantEnd := -1
			if c.want == headOK {
				wantEnd = len(c.head)
			}
			check := func(how string, parts ...string) {
				t.Helper()
				s := headScan{maxFields: limit}
				at, end, v := 0, -1, headOK
				for _, p := range parts {
					e, got := s.scan([]byte(p))
					if got != headOK {
						v = got
						break
					}
					if e >= 0 {
						end = at + e
						break
					}
					at += len(p)
				}
				if v != c.want || v == headOK && end != wantEnd {
					t.Fatalf("%s: verdict %d, end %d; want verdict %d, end %d", how, v, end, c.want, wantEnd)
				}
			}
			check("whole", c.head)
			for i := 1; i < len(c.head) && i < 400; i++ {
				check("cut at "+strconv.Itoa(i), c.head[:i], c.head[i:])
			}
			bytes := make([]string, len(c.head))
			for i := range c.head {
				bytes[i] = c.head[i : i+1]
			}
			check("byte by byte", bytes...)
		})
	}
}

// TestHeadScanEndsAtTheHeadsEnd: the index returned is just past the head's end,
// whatever follows it (a body, the next head), and reset scans the next head
// afresh.
func TestHeadScanEndsAtTheHeadsEnd(t *testing.T) {
	s := headScan{maxFields: 2}
	first := "POST / HTTP/1.1\nContent-Length: 3\n\n"
	next := "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n"
	end, v := s.scan([]byte(first + "abc" + next))
	if v != headOK || end != len(first) {
		t.Fatalf("scan = %d, %d; want %d, ok", end, v, len(first))
	}
	s.reset()
	if end, v := s.scan([]byte(next)); v != headOK || end != len(next) {
		t.Fatalf("after reset: scan = %d, %d; want %d, ok (the count starts again)", end, v, len(next))
	}
}

// BenchmarkHeadScan measures the scan of a common browser-like head (12 fields),
// beside net/http's parse of the same head, which every request pays anyway.
func BenchmarkHeadScan(b *testing.B) {
	head := []byte("GET /api/orders/12345?expand=items HTTP/1.1\r\n" +
		"Host: orders.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0\r\n" +
		"Accept: application/json\r\nAccept-Language: en-GB,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\n" +
		"Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.e30.abc\r\nConnection: keep-alive\r\n" +
		"Cookie: session=0123456789abcdef0123456789abcdef\r\nSec-Fetch-Dest: empty\r\nSec-Fetch-Mode: cors\r\n" +
		"Traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nX-Request-Id: 7f1c2a\r\n\r\n")
	b.Run("scan", func(b *testing.B) {
		s := headScan{maxFields: defaultMaxHeaderFields}
		b.SetBytes(int64(len(head)))
		b.ReportAllocs()
		for b.Loop() {
			s.reset()
			if end, v := s.scan(head); v != headOK || end != len(head) {
				b.Fatal(end, v)
			}
		}
	})
	b.Run("net-http-parse", func(b *testing.B) {
		r := bytes.NewReader(head)
		br := bufio.NewReader(r)
		b.SetBytes(int64(len(head)))
		b.ReportAllocs()
		for b.Loop() {
			r.Reset(head)
			br.Reset(r)
			if _, err := http.ReadRequest(br); err != nil {
				b.Fatal(err)
			}
		}
	})
}
