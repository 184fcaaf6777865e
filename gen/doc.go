// Package gen writes files of fast, incompressible pseudo-random data for
// iopath to read: test and benchmark inputs whose content a page cache,
// filesystem or device cannot compress or deduplicate.
//
// The content is a function of the seed and the offset only: the same seed
// and size give the same bytes on every run and machine (the generator is
// wyrand, one independently seeded stream per 1 MiB chunk, written little
// endian), different seeds give different bytes, and no chunk repeats
// another. Two goroutines generate chunks while the calling goroutine writes
// them, so that on a page-cache-backed filesystem the kernel's copy, not the
// generator, sets the pace.
//
// Tree writes a tree of many files (N files under nested directories of at
// most FanOut entries, sizes drawn from a fixed, ranged or log-normal Dist),
// seeded and repeatable, for the many-files benchmarks; it refuses to write
// into a directory it did not make (a marker file records its parameters).
//
// File and TempFile never leave a partial file behind: on any error
// (ENOSPC, EDQUOT, a cancelled context) the file is removed and the error
// names the path, the cause and how much had been written. File writes
// beside its target and renames into place when complete, so that an
// existing file it was asked to replace (Options.Force) survives any
// failure untouched. They are safe for concurrent use on different paths.
// Linux only (free space is checked with statfs(2) before writing).
package gen
