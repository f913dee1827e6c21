//go:build !race

package httpentry

// raceOn says whether the race detector is on: under it, sync.Pool drops a share of
// what is put in it on purpose, so a pooled object is sometimes allocated anew and
// allocation counts are not exact.
const raceOn = false
