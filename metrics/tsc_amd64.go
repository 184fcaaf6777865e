package metrics

const haveRDTSC = true

// rdtsc reads the time-stamp counter (tsc_amd64.s).
func rdtsc() int64
