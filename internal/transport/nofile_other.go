//go:build !unix

package transport

// nofileLimit is 4096 where the process has no descriptor limit to read.
func nofileLimit() int { return 4096 }
