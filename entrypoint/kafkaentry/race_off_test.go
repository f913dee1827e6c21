//go:build !race

package kafkaentry

// raceOn says whether the race detector is on: under it, allocation counts are not
// exact (the SDK's attribute slice, grown once, is allocated twice).
const raceOn = false
