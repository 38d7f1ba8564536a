//go:build !race

// Package racedetector says whether the binary has the race detector,
// for tests that build or size their work by it.
package racedetector

// Enabled is set when the binary is built with -race.
const Enabled = false
