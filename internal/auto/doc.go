// Package auto picks the I/O path for a read: which engine (package engine
// for one file, package batch for many), how many workers, and what queue
// depth and block size, from the shape of the access (Kind), the file's
// size or the files' median size, whether the data is in the page cache
// (mincore on a bounded sample), O_DIRECT, and what the kernel and process
// support (features.HaveOps, passed in by the caller: see Engines;
// GOMAXPROCS).
//
// Every rule is in one table (rules.go), each with the measurement that
// justifies it; docs/auto.md lists them with the commands and figures.
// Choose applies the rules and is pure (no I/O), so tests inject an Env;
// Decide measures what Choose needs first. The environment variable
// IOPATH_ENGINE overrides the engine when it names one that is valid for
// the access and can run here; otherwise it is ignored and the Choice's
// Reason says why. io_uring is never chosen when the probe says it cannot
// run (the next rule's engine is, and the Reason names the probe's
// reason), and mmap never with O_DIRECT.
//
// Residency and Decide only look: the file is opened read-only and mapped
// without being touched, so no page is read, faulted in or written. The
// functions are safe for concurrent use. Linux only.
package auto
