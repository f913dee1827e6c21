package host

import (
	"math"
	"runtime"
	"runtime/debug"

	"go.uber.org/zap"
)

// runtimeFields describe the runtime the service runs on, for the "service ready"
// line: GOMAXPROCS, the soft memory limit when one is set (GOMEMLIMIT or
// debug.SetMemoryLimit), and the Go version. Under a container's CPU and memory limits
// they decide how the pod behaves: a GOMAXPROCS above the CPU quota is throttled, and
// without a memory limit the heap can grow into the OOM killer.
func runtimeFields() []zap.Field {
	fields := []zap.Field{zap.Int("gomaxprocs", runtime.GOMAXPROCS(0))}
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		fields = append(fields, zap.Int64("gomemlimit", limit))
	}
	return append(fields, zap.String("go_version", runtime.Version()))
}
