package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	serveKind := flag.String("serve", "", "internal: run this server (bare, httpentry, httpentry-off, go-zero, kratos, grpc-bare, grpcentry)")
	grpcMode := flag.Bool("grpc", false, "compare gRPC servers instead (grpc-bare, grpcentry): a unary method, refusals are RESOURCE_EXHAUSTED or UNAVAILABLE")
	work := flag.Int("work", 0, "rounds of hashing per request (0: calibrate to -cpu)")
	cpu := flag.Duration("cpu", 2*time.Millisecond, "CPU per request to calibrate to")
	measure := flag.Duration("measure", 4*time.Second, "measured span of each cell")
	warm := flag.Duration("warm", 2*time.Second, "unmeasured span before it, for the limiters to settle")
	servers := flag.String("servers", "bare,httpentry,go-zero,kratos", "servers to compare")
	loads := flag.String("loads", "0.1,0.5,1,2,4", "offered load, in multiples of capacity; the first is the unloaded latency's")
	capFlag := flag.Float64("capacity", 0, "capacity in req/s (0: measure it)")
	rounds := flag.Int("runs", 3, "runs of each cell; the table shows the medians")
	idle := flag.Int("idle", 0, "instead: the cost below capacity, as this many interleaved closed-loop runs of bare, httpentry and httpentry-off on a trivial handler")
	flag.Parse()
	if *idle > 0 {
		self, err := os.Executable()
		if err != nil {
			fatal(err)
		}
		idleCost(self, *idle)
		return
	}
	if *serveKind != "" {
		run := serve
		if strings.HasPrefix(*serveKind, "grpc") {
			run = serveGRPC
		}
		if err := run(*serveKind, *work); err != nil {
			fatal(err)
		}
		return
	}
	if *work == 0 {
		*work = calibrate(*cpu)
	}
	self, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	// Capacity is measured again before each load level, with a closed loop on the
	// bare server: on a shared machine it drifts, and the levels are multiples of
	// what the machine gives at that moment.
	measureCapacity := func() float64 {
		if *capFlag > 0 {
			return *capFlag
		}
		if *grpcMode {
			p := start(self, "grpc-bare", *work)
			defer p.stop()
			closedLoopGRPC(p.addr(), 4, 500*time.Millisecond) // warm up
			return closedLoopGRPC(p.addr(), 4, 2*time.Second)
		}
		p := start(self, "bare", *work)
		defer p.stop()
		closedLoopRaw(p.addr(), 4, 500*time.Millisecond) // warm up
		return closedLoopRaw(p.addr(), 4, 2*time.Second)
	}
	if *grpcMode && !flagSet("servers") {
		*servers = "grpc-bare,grpcentry"
	}
	fmt.Printf("handler: %d hash rounds ≈ %v of CPU; servers at GOMAXPROCS=1; open loop, %v measured after %v; the median of %d runs per cell\n\n", *work, *cpu, *measure, *warm, *rounds)

	var levels []float64
	for _, f := range strings.Split(*loads, ",") {
		var x float64
		fmt.Sscan(f, &x)
		levels = append(levels, x)
	}
	kinds := strings.Split(*servers, ",")
	res := map[string]map[float64]result{}
	for _, k := range kinds {
		res[k] = map[float64]result{}
	}
	// Load level by load level, every server in turn, each in a fresh process, so
	// that a backlog left by one cell does not burden the next.
	// Each cell is run -runs times, the capacity measured afresh before each round,
	// and the table shows the median of each figure: on a shared machine one run
	// swings by a tenth.
	caps := map[float64]float64{}
	for _, x := range levels {
		var capRuns []float64
		runs := map[string][]result{}
		for range *rounds {
			c := measureCapacity()
			capRuns = append(capRuns, c)
			for _, k := range kinds {
				p := start(self, k, *work)
				var r result
				if strings.HasPrefix(k, "grpc") {
					r = openLoopGRPC(p.addr(), x*c, *warm, *measure)
				} else {
					r = openLoop(p.url, x*c, *warm, *measure)
				}
				p.stop()
				r.share = r.goodput / c
				runs[k] = append(runs[k], r)
			}
		}
		caps[x] = median(capRuns, func(c float64) float64 { return c })
		for _, k := range kinds {
			res[k][x] = medianResult(runs[k])
		}
	}

	fmt.Print("| server |")
	for _, x := range levels {
		fmt.Printf(" %.1f× (%.0f/s) goodput | p99 |", x, x*caps[x])
	}
	fmt.Print("\n|---|")
	for range levels {
		fmt.Print("---|---|")
	}
	fmt.Println()
	for _, k := range kinds {
		fmt.Printf("| %s |", k)
		for _, x := range levels {
			r := res[k][x]
			fmt.Printf(" %.0f/s (%.2f×) | %s |", r.goodput, r.share, ms(r.p99))
		}
		fmt.Println()
	}
	fmt.Println()
	fmt.Println("refused (503, RESOURCE_EXHAUSTED or UNAVAILABLE /s) and failed (errors or later than 1 s, /s) per cell:")
	for _, k := range kinds {
		fmt.Printf("  %-14s", k)
		for _, x := range levels {
			r := res[k][x]
			fmt.Printf("  %.1f×: %5.0f refused %5.0f failed, p50 %s", x, r.refused, r.failed, ms(r.p50))
		}
		fmt.Println()
	}
	for _, ours := range []string{"httpentry", "grpcentry"} {
		e, ok := res[ours]
		if !ok || len(levels) == 0 {
			continue
		}
		top := levels[len(levels)-1]
		lo, hi := e[levels[0]], e[top]
		fmt.Printf("\n%s at %.1f×: goodput %.2f× capacity (goal ≥ 0.90); p99 over its unloaded p99 (at %.1f×, %s; goal ≤ 3):",
			ours, top, hi.share, levels[0], ms(lo.p99))
		for _, x := range levels[1:] {
			fmt.Printf(" %.1f× at %.1f×", float64(e[x].p99)/float64(max(lo.p99, 1)), x)
		}
		fmt.Println()
	}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// addr is the server's host:port.
func (p *proc) addr() string { return strings.TrimSuffix(strings.TrimPrefix(p.url, "http://"), "/") }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

// calibrate finds how many hash rounds take d of CPU on this machine, timed with
// the thread's CPU clock so that a busy neighbour does not skew it.
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

// proc is a server process.
type proc struct {
	cmd *exec.Cmd
	url string
}

func start(self, kind string, work int) *proc {
	args := []string{"-serve", kind, "-work", fmt.Sprint(work)}
	cmd := exec.Command(self, args...)
	if cpu := os.Getenv("PEERS_SERVER_CPU"); cpu != "" {
		// The server on a CPU of its own, away from the load generator's.
		cmd = exec.Command("taskset", append([]string{"-c", cpu, self}, args...)...)
	}
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
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
	return &proc{cmd: cmd, url: "http://" + strings.TrimSpace(line) + "/"}
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
