// Package features answers "can this process use io_uring, op X, flag Y,
// and if not, why not", and describes the machine a result was measured on.
//
// Probe runs once per process and caches its answer when it is conclusive
// (io_uring works, or the kernel or policy forbids it); a transient failure
// (ENOMEM, an unexpected error) is probed again next time. The environment
// variable IOPATH_DISABLE_IO_URING=1 makes io_uring unavailable; it is read
// at every call, so tests and users can force the fallback paths.
//
// The functions are safe for concurrent use. Linux only.
package features
