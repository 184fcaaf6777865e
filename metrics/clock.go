package metrics

import (
	_ "unsafe" // for go:linkname
)

// Nanotime is the runtime's monotonic clock in nanoseconds: the cheapest
// clock Go has (one vDSO call, no wall-clock reading), used for per-block
// latency so that recording costs as little as possible.
//
//go:linkname Nanotime runtime.nanotime
func Nanotime() int64
