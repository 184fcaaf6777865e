//go:build !race

package bufpool

// raceEnabled: the race detector makes sync.Pool drop items at random and
// testing.AllocsPerRun unreliable, so allocation assertions are skipped.
const raceEnabled = false
