package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// weightFigure compares the README's hello program (host + httpentry) with the same
// service written on net/http + zap + prometheus + the OpenTelemetry SDK
// (internal/cmd/hellobaseline): stripped binary size, and packages linked.
func weightFigure(e env) ([]row, error) {
	const (
		hello    = "github.com/servicewright/servicewright/internal/doccheck/snippets/hellohttp"
		baseline = "github.com/servicewright/servicewright/internal/cmd/hellobaseline"
	)
	size := func(pkg string) (int64, int, error) {
		bin := filepath.Join(e.dir, "stripped-"+filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return 0, 0, err
		}
		fi, err := os.Stat(bin)
		if err != nil {
			return 0, 0, err
		}
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			return 0, 0, err
		}
		return fi.Size(), len(strings.Fields(string(out))), nil
	}
	hs, hp, err := size(hello)
	if err != nil {
		return nil, err
	}
	bs, bp, err := size(baseline)
	if err != nil {
		return nil, err
	}
	ratio := float64(hs) / float64(bs)
	return []row{{
		Figure:   "hello program (host + httpentry), stripped binary (-ldflags='-s -w')",
		Target:   "≤ 1.6× the baseline",
		Measured: fmt.Sprintf("%.1f MB, %d packages (%.2f×)", float64(hs)/1e6, hp, ratio),
		Baseline: fmt.Sprintf("net/http + zap + prometheus + OTel SDK %.1f MB, %d packages", float64(bs)/1e6, bp),
		Verdict:  verdict(ratio <= 1.6),
	}}, nil
}
