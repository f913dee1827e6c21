// Package weight holds DESIGN §18's weight table: what each package may link,
// checked with `go list` by TestWeight. It has no code of its own.
package weight
