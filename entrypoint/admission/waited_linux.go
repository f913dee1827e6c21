package admission

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// processWaited is how long the process's threads have waited, in all, runnable
// but not running — for a CPU a neighbour held (another process, on a shared core)
// — from each thread's /proc/self/task/*/schedstat (its second field), or 0 when
// that cannot be read. It is read once a window, by the Finish that closes it.
func processWaited() time.Duration {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	var sum int64
	buf := make([]byte, 0, 64)
	for _, t := range tasks {
		f, err := os.Open("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		n, _ := f.Read(buf[:cap(buf)])
		f.Close()
		fields := bytes.Fields(buf[:n])
		if len(fields) < 2 {
			continue
		}
		if v, err := strconv.ParseInt(string(fields[1]), 10, 64); err == nil {
			sum += v
		}
	}
	return time.Duration(sum)
}
