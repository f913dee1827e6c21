package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServerOnItsOwnCore holds the harness to what it measures: a generator that
// pinSelf has moved to its core starts each server under taskset on the server's
// core. A pinned process's runtime.NumCPU is 1, so a decision taken on it started
// every server unpinned, sharing the generator's core.
func TestServerOnItsOwnCore(t *testing.T) {
	const helper = "OPENLOOP_TEST_SERVER_COMMAND"
	if os.Getenv(helper) != "" { // the generator, pinned
		os.Stdout.WriteString(strings.Join(serverCommand("server", "-serve", "bare").Args, " ") + "\n")
		return
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: nothing to pin")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("no taskset")
	}
	// The generator as pinSelf leaves it: on its core, pinnedEnv set.
	cmd := exec.Command(taskset, "-c", clientCPU(), os.Args[0], "-test.run=^TestServerOnItsOwnCore$")
	cmd.Env = append(os.Environ(), helper+"=1", pinnedEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the pinned generator: %v\n%s", err, out)
	}
	want := "taskset -c " + serverCPU() + " server -serve bare"
	if !strings.Contains(string(out), want) {
		t.Errorf("a pinned generator starts its server as\n%s\nwant %q", out, want)
	}
}
