// Package doccheck keeps the documentation honest: every ```go block in README.md and
// docs/*.md must appear, line for line, in a Go file of the repository that the
// compiler checks (an Example, a test, or the snippets file here). A block edited in
// the docs but not in code fails the test, and so does code changed under a block.
package doccheck
