// Command refgen writes docs/reference.md from the code: every Config field of
// every public package with its default and environment variable, the exit codes
// and the metrics (see doccheck.Reference). Run it from the repository's root:
//
//	go run ./internal/cmd/refgen
//
// internal/doccheck's TestReferenceIsCurrent fails until the committed file is what
// this writes.
package main

import (
	"fmt"
	"os"

	"github.com/servicewright/servicewright/internal/doccheck"
)

func main() {
	out, err := doccheck.Reference(".")
	if err == nil {
		err = os.WriteFile("docs/reference.md", out, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "refgen:", err)
		os.Exit(1)
	}
}
