// Package weight holds the weight table of docs/architecture.md: what each package may link,
// checked with `go list` by TestWeight. It has no code of its own.
package weight
