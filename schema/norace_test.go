//go:build !race

package schema_test

// raceDetector is set in a test binary built with -race.
const raceDetector = false
