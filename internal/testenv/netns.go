package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// PostgresListen makes the server listen on addr besides 127.0.0.1, and accept
// connections from addr's /24 (trust, as on loopback): for clients in a Netns.
func PostgresListen(addr string) PostgresOption {
	return func(p *Postgres) { p.listen = append(p.listen, addr) }
}

// allowListen adds pg_hba.conf lines for the PostgresListen addresses.
func (pg *Postgres) allowListen() error {
	if len(pg.listen) == 0 {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(pg.dataDir(), "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	for _, a := range pg.listen {
		_, err = fmt.Fprintf(f, "host all all %s/24 trust\n", a)
	}
	return errors.Join(err, f.Close())
}

// Netns is a network namespace reached from the host's through a router namespace
// (two veth pairs): the host's end of the first has HostIP, the namespace's end of
// the second NSIP. A process started with Command runs inside it and reaches
// servers listening on HostIP. Cut drops every packet the router would forward,
// both ways and silently — the two ends see no error, no reset, no refusal: their
// packets just never arrive, as in a network partition — and Heal lets them
// through again. The drop happens in the router, not on either end's own device,
// where the kernel would report it to TCP as local congestion and keepalives would
// behave unlike a real partition.
type Netns struct {
	Name         string
	HostIP, NSIP string
	router       string
	hostDev      string // the host's end of the first pair
	rHost, rNS   string // the router's ends
	nsDev        string // the namespace's end of the second pair
	subnet       string // the namespace's /30, routed through the router
}

// NewNetns creates the namespaces and their veth pairs, removed when t ends. It
// needs root, the ip and tc commands and a kernel with network namespaces: where
// they are unavailable the test is skipped with the reason, unless CI is "true",
// where it fails.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf("network namespaces unavailable: "+format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if os.Geteuid() != 0 {
		unavailable("the test must run as root to create them")
	}
	for _, c := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(c); err != nil {
			unavailable("no %s command (iproute2)", c)
		}
	}
	id := rand.Uint32N(1 << 13)
	base := net.IPv4(10, 213, byte(id>>5), byte(id&31)*8).To4()
	n := &Netns{
		Name:    fmt.Sprintf("swtest%d", id),
		router:  fmt.Sprintf("swtest%dr", id),
		hostDev: fmt.Sprintf("swh%d", id),
		rHost:   fmt.Sprintf("swrh%d", id),
		rNS:     fmt.Sprintf("swrn%d", id),
		nsDev:   fmt.Sprintf("swn%d", id),
		HostIP:  ipPlus(base, 1),
		NSIP:    ipPlus(base, 6),
		subnet:  ipPlus(base, 4) + "/30",
	}
	if out, err := ip("netns", "add", n.Name); err != nil {
		unavailable("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		_, _ = ip("link", "del", n.hostDev)
		_, _ = ip("route", "del", n.subnet)
		_, _ = ip("netns", "del", n.router)
		_, _ = ip("netns", "del", n.Name)
	})
	inR := func(args ...string) []string { return append([]string{"netns", "exec", n.router, "ip"}, args...) }
	inN := func(args ...string) []string { return append([]string{"netns", "exec", n.Name, "ip"}, args...) }
	for _, args := range [][]string{
		{"netns", "add", n.router},
		{"link", "add", n.hostDev, "type", "veth", "peer", "name", n.rHost},
		{"link", "set", n.rHost, "netns", n.router},
		{"addr", "add", n.HostIP + "/30", "dev", n.hostDev},
		{"link", "set", n.hostDev, "up"},
		inR("link", "add", n.rNS, "type", "veth", "peer", "name", n.nsDev),
		inR("link", "set", n.nsDev, "netns", n.Name),
		inR("addr", "add", ipPlus(base, 2)+"/30", "dev", n.rHost),
		inR("addr", "add", ipPlus(base, 5)+"/30", "dev", n.rNS),
		inR("link", "set", n.rHost, "up"),
		inR("link", "set", n.rNS, "up"),
		inN("addr", "add", n.NSIP+"/30", "dev", n.nsDev),
		inN("link", "set", n.nsDev, "up"),
		inN("link", "set", "lo", "up"),
		inN("route", "add", "default", "via", ipPlus(base, 5)),
		{"route", "add", n.subnet, "via", ipPlus(base, 2)},
		{"netns", "exec", n.router, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"},
	} {
		if out, err := ip(args...); err != nil {
			t.Fatalf("testenv: netns: ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return n
}

func ipPlus(base net.IP, k byte) string {
	b := base.To4()
	return net.IPv4(b[0], b[1], b[2], b[3]+k).String()
}

func ip(args ...string) ([]byte, error) { return exec.Command("ip", args...).CombinedOutput() }

// Command returns a command that runs name inside the namespace (through ip netns
// exec, which execs it: the process's pid is the command's).
func (n *Netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Cut makes the router drop every packet it forwards, both ways: a queue of length
// 0 on each of its devices. (tc's pfifo is built into every kernel with traffic
// control; iptables and netem may be missing.)
func (n *Netns) Cut() error {
	for _, dev := range []string{n.rHost, n.rNS} {
		if out, err := ip("netns", "exec", n.router, "tc", "qdisc", "add", "dev", dev, "root", "pfifo", "limit", "0"); err != nil {
			return fmt.Errorf("testenv: netns: cut %s: %v: %s", dev, err, out)
		}
	}
	return nil
}

// Heal lets packets through again.
func (n *Netns) Heal() error {
	var errs []error
	for _, dev := range []string{n.rHost, n.rNS} {
		if out, err := ip("netns", "exec", n.router, "tc", "qdisc", "del", "dev", dev, "root"); err != nil {
			errs = append(errs, fmt.Errorf("testenv: netns: heal %s: %v: %s", dev, err, out))
		}
	}
	return errors.Join(errs...)
}
