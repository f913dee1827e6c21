package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
)

func main() {
	serveKind := flag.String("serve", "", "internal: run this server (bare, httpentry)")
	work := flag.Int("work", 0, "rounds of hashing per request (0: calibrate to -cpu)")
	cpu := flag.Duration("cpu", 2*time.Millisecond, "CPU per request to calibrate to")
	measure := flag.Duration("measure", 10*time.Second, "measured span of each level")
	warm := flag.Duration("warm", 2*time.Second, "unmeasured span before it")
	servers := flag.String("servers", "bare,httpentry", "servers to compare")
	loads := flag.String("loads", "0.1,0.5,4", "offered loads, in multiples of capacity; the first is the unloaded latency's")
	flag.Parse()
	if *serveKind != "" {
		if err := serve(*serveKind, *work); err != nil {
			fatal(err)
		}
		return
	}
	pinSelf()
	if *work == 0 {
		*work = calibrate(*cpu)
	}
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	var levels []float64
	for _, f := range strings.Split(*loads, ",") {
		var x float64
		if _, err := fmt.Sscan(f, &x); err != nil || x <= 0 {
			fatal(fmt.Errorf("-loads: %q is not a positive number", f))
		}
		levels = append(levels, x)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	cores := fmt.Sprintf("server at GOMAXPROCS=1 on CPU %s, generator on CPU %s", serverCPU(), clientCPU())
	if os.Getenv(pinnedEnv) == "" {
		cores = "server at GOMAXPROCS=1 and generator unpinned"
	}
	fmt.Printf("openloop: %d hash rounds ≈ %v of CPU, %s; %v measured after %v per level; load average %s\n\n",
		*work, *cpu, cores, *measure, *warm, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Printf("| server | capacity | unloaded p99 (%.1f×) |", levels[0])
	for _, x := range levels[1:] {
		fmt.Printf(" %.1f× goodput | p99 from schedule (from send) | ×unloaded |", x)
	}
	fmt.Print("\n|---|---|---|")
	for range levels[1:] {
		fmt.Print("---|---|---|")
	}
	fmt.Println()
	var notes []string // what each level's server used, printed after the table
	for _, kind := range strings.Split(*servers, ",") {
		p := start(self, "bare", *work) // capacity is bare net/http's, for every server
		closedLoop(p.addr, 4, 500*time.Millisecond)
		capacity := closedLoop(p.addr, 4, 2*time.Second)
		p.stop()
		var rs []result
		for _, x := range levels {
			p := start(self, kind, *work)
			rs = append(rs, openLoop(p.addr, p.cmd.Process.Pid, x*capacity, *warm, *measure))
			p.stop()
		}
		base := rs[0].p99
		fmt.Printf("| %s | %.0f/s | %s |", kind, capacity, ms(base))
		for _, r := range rs[1:] {
			fmt.Printf(" %.2f× | %s (%s) | %.1f× |", r.goodput/capacity, ms(r.p99), ms(r.p99Send), float64(r.p99)/float64(max(base, 1)))
		}
		fmt.Println()
		for i, r := range rs {
			sec := measure.Seconds()
			notes = append(notes, fmt.Sprintf("%s at %.1f×: the server ran %.0f%% of the span, %.0f µs of CPU per 2xx; %.0f refused/s; %d connections opened",
				kind, levels[i], 100*r.ran.Seconds()/sec, r.ran.Seconds()*1e6/max(1, r.goodput*sec), float64(r.refused)/sec, r.dials))
		}
	}
	fmt.Println()
	for _, n := range notes {
		fmt.Println(n)
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("load average after: %s (the goal: p99 from schedule ≤ 3× unloaded at 0.5× and 4×, goodput at 4× ≥ 0.90×)\n", strings.Join(strings.Fields(string(load))[:3], " "))
}

func serverCPU() string { return envOr("OPENLOOP_SERVER_CPU", "1") }
func clientCPU() string { return envOr("OPENLOOP_CLIENT_CPU", "0") }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// pinnedEnv is set in the generator's environment once pinSelf has moved it to its
// core; the servers are pinned to theirs only then (serverCommand).
const pinnedEnv = "OPENLOOP_PINNED"

// pinSelf moves the generator to its core: it re-executes itself under taskset
// once, unless the machine has a single CPU or taskset is missing.
func pinSelf() {
	if runtime.NumCPU() < 2 || os.Getenv(pinnedEnv) != "" {
		return
	}
	path, err := exec.LookPath("taskset")
	if err != nil {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	os.Setenv(pinnedEnv, "1")
	argv := append([]string{"taskset", "-c", clientCPU(), self}, os.Args[1:]...)
	fatal(syscall.Exec(path, argv, os.Environ()))
}

// burn does work rounds of hashing: the CPU a request costs.
func burn(work int) byte {
	var sum [32]byte
	for range work {
		sum = sha256.Sum256(sum[:])
	}
	return sum[0]
}

// calibrate finds how many hash rounds take d of CPU, timed with the thread's CPU
// clock so that a busy neighbour does not skew it.
func calibrate(d time.Duration) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	n := 1000
	for {
		t := cpu()
		burn(n)
		if took := cpu() - t; took > 200*time.Millisecond {
			return int(float64(n) * float64(d) / float64(took))
		}
		n *= 2
	}
}

// serve runs the server of kind on a loopback port, prints the address on stdout
// and serves until SIGTERM.
func serve(kind string, work int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b := burn(work)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "ok %d\n", b)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	if path := os.Getenv("OPENLOOP_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	switch kind {
	case "httpentry":
		s, err := httpentry.New(httpentry.Config{}, h, httpentry.WithListener(ln))
		if err != nil {
			return err
		}
		if err := s.Bind(ctx); err != nil {
			return err
		}
		if err := s.Serve(context.Background(), ctx.Done()); err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.Drain(dctx)
		return s.Stop(dctx)
	case "bare":
		srv := &http.Server{Handler: h, ReadHeaderTimeout: httpentry.DefaultReadHeaderTimeout,
			ReadTimeout: httpentry.DefaultReadTimeout, IdleTimeout: httpentry.DefaultIdleTimeout}
		go func() { <-ctx.Done(); _ = srv.Close() }()
		if err := srv.Serve(ln); err != http.ErrServerClosed {
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown server %q", kind)
}

// proc is a server process.
type proc struct {
	cmd  *exec.Cmd
	addr string
}

// start runs the server of kind (see serverCommand).
func start(self, kind string, work int) *proc {
	cmd := serverCommand(self, "-serve", kind, "-work", fmt.Sprint(work))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fatal(err)
	}
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		fatal(fmt.Errorf("server %s did not start: %v", kind, err))
	}
	return &proc{cmd: cmd, addr: strings.TrimSpace(line)}
}

// serverCommand is the command that runs self with args as a server: at
// GOMAXPROCS=1 and, once pinSelf has moved the generator to its core, under
// taskset on the server's. The decision cannot be runtime.NumCPU's: it counts the
// CPUs a process may use, one in a pinned generator, and a server started without
// taskset would inherit the generator's core and share it.
func serverCommand(self string, args ...string) *exec.Cmd {
	cmd := exec.Command(self, args...)
	if os.Getenv(pinnedEnv) != "" {
		cmd = exec.Command("taskset", append([]string{"-c", serverCPU(), self}, args...)...)
	}
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	return cmd
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "openloop:", err)
	os.Exit(1)
}
