package httpentry

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
)

// A pipeConn hands net/http one request head at a time, finds a head end split
// across socket reads, and loses or adds no byte whatever the sizes of the socket's
// reads and of the caller's buffer (net/http's background read asks for one byte).
func TestPipeConnHandsOneHeadAtATime(t *testing.T) {
	stream := "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 4\r\n\r\nbodyGET /c HTTP/1.1\r\n\r\n"
	for _, c := range []struct{ chunk, buf int }{
		{1, 4096}, {2, 4096}, {3, 4096}, {5, 4096}, {7, 4096}, {64, 4096},
		{64, 1}, {64, 2}, {64, 5}, {7, 3}, {200, 30},
	} {
		chunk := c.chunk
		server, client := net.Pipe()
		go func() {
			for s := stream; s != ""; {
				n := min(chunk, len(s))
				client.Write([]byte(s[:n]))
				s = s[n:]
			}
			client.Close()
		}()
		pc := &pipeConn{Conn: server}
		var got bytes.Buffer
		var reads []string
		buf := make([]byte, c.buf)
		for {
			n, err := pc.Read(buf)
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
			t.Fatalf("chunk %d, buffer %d: got %q, want the stream unchanged", chunk, c.buf, got.String())
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
				t.Errorf("chunk %d, buffer %d: no read ends at the head end at %d: %q", chunk, c.buf, off, reads)
			}
		}
	}
}
