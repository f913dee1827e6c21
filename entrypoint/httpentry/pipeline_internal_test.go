package httpentry

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
)

// A pipeConn hands net/http one request head at a time, finds a head end split
// across socket reads, and loses or adds no byte whatever the read sizes.
func TestPipeConnHandsOneHeadAtATime(t *testing.T) {
	stream := "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 4\r\n\r\nbodyGET /c HTTP/1.1\r\n\r\n"
	for _, chunk := range []int{1, 2, 3, 5, 7, 64} {
		server, client := net.Pipe()
		go func() {
			for s := stream; s != ""; {
				n := min(chunk, len(s))
				client.Write([]byte(s[:n]))
				s = s[n:]
			}
			client.Close()
		}()
		c := &pipeConn{Conn: server}
		var got bytes.Buffer
		var reads []string
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			got.Write(buf[:n])
			if n > 0 {
				reads = append(reads, string(buf[:n]))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		server.Close()
		if got.String() != stream {
			t.Fatalf("chunk %d: got %q, want the stream unchanged", chunk, got.String())
		}
		ends := map[int]bool{} // where each read ended, in the stream
		at := 0
		for _, r := range reads {
			at += len(r)
			ends[at] = true
		}
		for off := 0; ; {
			i := strings.Index(stream[off:], "\r\n\r\n")
			if i < 0 {
				break
			}
			off += i + 4
			if !ends[off] {
				t.Errorf("chunk %d: no read ends at the head end at %d: %q", chunk, off, reads)
			}
		}
	}
}
