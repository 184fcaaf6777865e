// Package features answers "can this process use io_uring, op X, flag Y,
// and if not, why not", and describes the machine a result was measured on.
//
// Probe sets up a tiny ring, asks it for its opcodes and completes a NOP
// through it, so that io_uring_setup, io_uring_register and
// io_uring_enter have all been allowed before it says "available"; a
// seccomp profile may forbid any one of them, and the answer names the
// call that was refused and what to allow. It runs once per process and
// caches its answer when it is conclusive (io_uring works, or the kernel
// or policy forbids it); a transient failure (ENOMEM, EMFILE, an
// unexpected error) is probed again next time. Classify is where every
// ring creator sends its io_uring errors: a refusal becomes an error
// wrapping ErrNotSupported and updates the cached answer; a resource
// error stays itself. The environment variable IOPATH_DISABLE_IO_URING=1
// makes io_uring unavailable; it is read at every call, so tests and
// users can force the fallback paths.
//
// The functions are safe for concurrent use. Linux only.
package features
