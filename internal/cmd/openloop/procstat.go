package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// serverRun is how long the threads of process pid have run so far, from
// /proc/<pid>/task/*/schedstat, or 0 where that cannot be read. Over a measured
// span it says whether the server had its core: a CPU-bound server at 4× its
// capacity that ran for much less than the span was waiting for a neighbour.
func serverRun(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, e := range tasks {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		if f := bytes.Fields(b); len(f) > 0 {
			ns, _ := strconv.ParseInt(string(f[0]), 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}
