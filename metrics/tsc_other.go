//go:build !amd64

package metrics

const haveRDTSC = false

func rdtsc() int64 { return Nanotime() }
