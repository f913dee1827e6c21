//go:build race

package httpentry

const raceOn = true
