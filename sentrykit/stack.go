package sentrykit

import (
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/getsentry/sentry-go"
)

// stacktrace turns a goroutine's stack as runtime/debug.Stack prints it into
// Sentry's frames, oldest call first. The frames above the panic (the recovery
// itself) are left out.
//
// The text is a header line, then two lines a frame: the function with its
// arguments, then a tab, file:line and an offset. "created by" lines name the
// function that started the goroutine.
func stacktrace(stack []byte) *sentry.Stacktrace {
	lines := strings.Split(strings.TrimSpace(string(stack)), "\n")
	var frames []runtime.Frame // innermost first, as printed
	for i := 0; i+1 < len(lines); i++ {
		fn, loc := lines[i], lines[i+1]
		if !strings.HasPrefix(loc, "\t") {
			continue
		}
		i++
		if rest, ok := strings.CutPrefix(fn, "created by "); ok {
			fn, _, _ = strings.Cut(rest, " in goroutine ")
		} else if j := strings.LastIndexByte(fn, '('); j > 0 && strings.HasSuffix(fn, ")") {
			fn = fn[:j]
		}
		file, line := strings.TrimSpace(loc), 0
		if j := strings.LastIndex(file, " +0x"); j > 0 {
			file = file[:j]
		}
		if j := strings.LastIndexByte(file, ':'); j > 0 {
			line, _ = strconv.Atoi(file[j+1:])
			file = file[:j]
		}
		frames = append(frames, runtime.Frame{Function: fn, File: file, Line: line})
	}
	// The panic is the last frame named "panic": what follows it is the code that
	// panicked and its callers. A panic re-raised on its way up leaves an earlier one.
	for k := len(frames) - 1; k >= 0; k-- {
		if frames[k].Function == "panic" {
			frames = frames[k+1:]
			break
		}
	}
	out := &sentry.Stacktrace{}
	for _, f := range slices.Backward(frames) {
		out.Frames = append(out.Frames, sentry.NewFrame(f))
	}
	return out
}
