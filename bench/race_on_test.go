//go:build race

package bench

// raceEnabled: this test binary runs under the race detector, which slows
// user code many times, so shares of CPU between user and kernel code
// move.
const raceEnabled = true
