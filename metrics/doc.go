// Package metrics holds the measurements iopath records: latency histograms,
// the process's resource usage, and the engines' own call counters.
//
// A Histogram is not safe for concurrent use: each worker records into its
// own and the runner merges them when the run is over.
package metrics
