//go:build !race

package testkit

// raceDetector: the race detector is on (code runs several times slower).
const raceDetector = false
