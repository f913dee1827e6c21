//go:build race

package kafkaentry

const raceOn = true
