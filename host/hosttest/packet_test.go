package hosttest_test

import (
	"errors"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/host/hosttest"
)

// packetQueue is what each end of a pair holds unread, as NewPacketPair's doc says.
const packetQueue = 64

// TestPacketPair: datagrams cross whole, with the writer's address; a short buffer
// gets the head; a full queue drops; read deadlines run on the bubble's clock, also
// for a read already blocked, and can be lifted; Close ends a blocked read.
func TestPacketPair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server, client := hosttest.NewPacketPair()
		defer client.Close()
		if _, err := client.WriteTo([]byte("hello"), server.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, from, err := server.ReadFrom(buf)
		if err != nil || string(buf[:n]) != "hello" || from != client.LocalAddr() {
			t.Fatalf("read %q from %v, %v", buf[:n], from, err)
		}
		server.WriteTo([]byte("0123456789"), from)
		short := make([]byte, 4)
		if n, _, _ := client.ReadFrom(short); string(short[:n]) != "0123" {
			t.Fatalf("short read %q, want the datagram's head", short[:n])
		}

		for i := range packetQueue + 3 {
			client.WriteTo([]byte{byte(i)}, nil)
		}
		for i := range packetQueue {
			if n, _, _ := server.ReadFrom(buf); n != 1 || buf[0] != byte(i) {
				t.Fatalf("datagram %d: %v", i, buf[:n])
			}
		}

		began := time.Now()
		server.SetReadDeadline(began.Add(time.Hour))
		late := make(chan error, 1)
		go func() { _, _, err := server.ReadFrom(buf); late <- err }()
		synctest.Wait()
		server.SetReadDeadline(began.Add(2 * time.Second)) // moves the blocked read's deadline
		if err := <-late; !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(began) != 2*time.Second {
			t.Fatalf("read ended after %v with %v, want os.ErrDeadlineExceeded after 2s (the queue's overflow was not dropped?)", time.Since(began), err)
		}
		server.SetReadDeadline(time.Time{})
		client.WriteTo([]byte("again"), nil)
		if n, _, err := server.ReadFrom(buf); err != nil || string(buf[:n]) != "again" {
			t.Fatalf("read after the deadline was lifted: %q, %v", buf[:n], err)
		}

		go func() { _, _, err := server.ReadFrom(buf); late <- err }()
		synctest.Wait()
		server.Close()
		if err := <-late; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read on a closed end: %v", err)
		}
		if _, err := client.WriteTo([]byte("lost"), nil); err != nil {
			t.Fatalf("a write to a closed peer is lost silently, as UDP's: %v", err)
		}
	})
}
