package fileio

// Hooks for tests (the white-box tests of this module reach the layer
// through them). Nothing but a test sets them.
var (
	// TestMaxRead, if > 0, makes every synchronous read through Preadv or
	// ReadSeq return at most that many bytes (from its first buffer
	// only), as a partly cached file can with RWF_NOWAIT, so that tests
	// reach the code that goes on after a short read.
	TestMaxRead int

	// TestHookSubmit, if set, runs after each submit-and-wait of
	// Ring.Read and Ring.Wait, and can make it fail as if the ring had.
	TestHookSubmit func() error

	// TestHookPrep, if set, sees the length of every read prepared.
	TestHookPrep func(n int)
)
