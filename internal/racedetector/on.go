//go:build race

package racedetector

// Enabled is set when the binary is built with -race.
const Enabled = true
