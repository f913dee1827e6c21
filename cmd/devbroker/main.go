// Command devbroker runs a Kafka-protocol broker in memory for development: several
// replicas of a service on one machine can share it, which the broker a service embeds
// on its own (the example without KAFKA_BROKERS) cannot do. It is the broker of
// servicewright's tests, github.com/twmb/franz-go/pkg/kfake, speaking the real wire
// protocol over TCP, so kafka-go, franz-go and kcat all work against it. Data lives in
// memory and is gone when it exits. It is for development only: no authentication, no
// persistence, loopback by default.
//
//	go run github.com/servicewright/servicewright/cmd/devbroker -addr 127.0.0.1:9092 -topic orders=3 -topic orders.dlq=1
//
// It prints the address it serves once it listens ("listening on 127.0.0.1:9092"),
// and exits on SIGINT or SIGTERM. Exit codes: 0 stopped by a signal, 2 bad flags, 1 the
// broker could not start (the port is taken, say).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// topics is the repeatable -topic flag: name=partitions.
type topics map[string]int

func (t topics) String() string { return fmt.Sprint(map[string]int(t)) }

func (t topics) Set(v string) error {
	name, n, ok := strings.Cut(v, "=")
	if !ok {
		n = "1"
	}
	p, err := strconv.Atoi(n)
	if name == "" || err != nil || p < 1 {
		return errors.New("want name=partitions, partitions at least 1")
	}
	t[name] = p
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devbroker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9092", "loopback address to serve; port 0 picks a free one")
	tt := topics{}
	fs.Var(tt, "topic", "a topic to create, name=partitions (repeatable)")
	autoCreate := fs.Bool("auto-create", true, "create a topic a client asks for, as auto.create.topics.enable=true does")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	host, portText, err := net.SplitHostPort(*addr)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil || port < 0 || port > 65535 {
		fmt.Fprintf(stderr, "devbroker: -addr %q: want host:port with a port from 0 to 65535\n", *addr)
		return 2
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "devbroker: -addr %q: the broker has no authentication and serves loopback only\n", *addr)
		return 2
	}
	b, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Ports: []int{port}, Topics: tt, AutoCreateTopics: *autoCreate})
	if err != nil {
		fmt.Fprintf(stderr, "devbroker: %v\n", err)
		return 1
	}
	defer b.Close()
	fmt.Fprintf(stdout, "listening on %s\n", b.Addr())
	<-ctx.Done()
	return 0
}
