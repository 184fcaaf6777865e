// Package defaults holds the engines' settings that more than one layer
// needs: engine and batch run with them when a job leaves a field zero,
// and internal/auto's rules pick them. They live here, under all three,
// so that auto (which imports nothing above internal/) states them by
// name instead of keeping copies that could drift from the engines'.
package defaults

const (
	// QueueDepth is engine's io_uring reads in flight per ring for one
	// file (engine.DefaultQueueDepth).
	QueueDepth = 32
	// ManyDepth is batch's io_uring files in flight per ring
	// (batch.DefaultDepth).
	ManyDepth = 64
	// PoolWorkers is batch's pool engine's goroutines
	// (batch.DefaultPoolWorkers).
	PoolWorkers = 128
)
