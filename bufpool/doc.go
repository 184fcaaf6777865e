// Package bufpool reads whole files and streams into reusable buffers, and
// hands out byte buffers by size class, so that a program which reads many
// inputs makes next to no garbage doing it: Get, Release and ReadAll
// allocate nothing in steady state, ReadFile one small string copy.
//
//	b, err := bufpool.ReadFile(path)
//	if err != nil {
//		return err
//	}
//	defer b.Release()
//	use(b.Bytes())
//
// # Lifetime
//
// A *Buf owns its memory from the call that returned it until its Release.
// The slice that Bytes returns is valid only until then: never keep it, or a
// sub-slice of it, past Release, and never call any method of a Buf after its
// Release. Release gives the memory (and the handle itself) back to the pool
// for the next caller, who will overwrite it. Release exactly once; a nil
// *Buf may be released (it does nothing), which suits error paths.
//
// The package does not check this rule in a normal build: the checks would
// cost every call. Build with the invariants tag
//
//	go test -tags invariants ./...
//
// and every Buf method panics, with a message naming the misuse, when it is
// called after Release (including a second Release); handles are then never
// reused, released memory is filled with the byte 0xDB, and a pool that
// hands the memory out again panics if it finds that pattern disturbed, which
// catches writes through a slice kept past Release.
//
// # Classes and memory
//
// Sizes are rounded up to a power-of-two class, from MinClass (64 B) to
// MaxClass (1 GiB); each class has its own free list (a sync.Pool of
// handles, each holding its buffer). Get(n) returns a Buf of length n and
// capacity the class size. Requests larger than MaxClass are served exactly
// (rounded up to the page size) and are not pooled: their Release drops them.
//
// All memory is ordinary Go heap memory, so a stale slice kept past Release
// is a logic bug that reads someone else's data, never a fault or a
// corruption of memory the runtime does not own. Every buffer of a class at
// least the page size (4 KiB) starts on a page boundary and its capacity is a
// multiple of the page size, so it can be used for O_DIRECT I/O; GetAligned
// returns such a buffer for any n. (Go's allocator already places objects of
// these sizes on page boundaries; bufpool checks each new buffer and
// over-allocates to align it in the rare case it is not.)
//
// Idle buffers are dropped by the garbage collector like anything in a
// sync.Pool, so a pool does not pin memory after a burst. The contents of a
// buffer from Get are not zeroed: they are whatever its previous user left.
//
// # Reading
//
// ReadAll and ReadFile read until end of file and return exactly the bytes
// read. They size the first buffer from what the source says about its size
// (fstat for ReadFile; Len() int, or Stat() for a regular file, for
// ReadAll), but never trust it: a source that yields more grows the buffer,
// one that yields less gets a buffer of the right class. A stated size above
// 1 TiB is ignored, and the first buffer is at most 64 MiB whatever the
// stated size; beyond that the buffer grows as data actually arrives. When
// the size is unknown, ReadAll starts from the size of the pool's previous
// unknown-size read (at most 1 MiB), so that a program that reads similar
// inputs reads each into one buffer without copying.
//
// ReadFile reads a file that states no size (a device, a pipe, a file of
// /proc or /sys) to its end, up to DefaultLimit (64 MiB) bytes, past
// which it fails with ErrLimit rather than fill memory from
// /proc/self/pagemap or /dev/zero; ReadFileLimit sets another limit.
// ReadAll has no limit: wrap the reader in an io.LimitReader.
//
// # Concurrency
//
// A Pool, and the package-level functions that use the default pool, are
// safe for concurrent use by any number of goroutines. A Buf is not: it
// belongs to one goroutine at a time (it may be handed to another, with the
// usual synchronization, and released there).
package bufpool
