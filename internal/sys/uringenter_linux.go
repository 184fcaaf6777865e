package sys

import "golang.org/x/sys/unix"

// IoUringEnterNoWait is io_uring_enter(2) with min_complete 0 and no
// extended argument: it submits toSubmit SQEs and, with the GETEVENTS
// flag, runs the ring's pending completion work, and never waits for a
// completion. It is a raw system call, outside the runtime's syscall
// bookkeeping, like PreadvNowait: io_uring_enter that does a batch's
// work (a few hundred sends, say) can take longer than the 20 µs after
// which the runtime's monitor takes a thread's P away and wakes another
// thread to run it, which costs two context switches and a P hand-back
// per batch on a busy event loop. Use it only where the call cannot
// block: a waiting io_uring_enter must go through IoUringEnter, so that
// the runtime schedules other goroutines meanwhile.
func IoUringEnterNoWait(fd int, toSubmit, flags uint32) (int, error) {
	n, _, e := unix.RawSyscall6(SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), 0, uintptr(flags), 0, 0)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}
