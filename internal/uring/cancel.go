package uring

// Cancel flags (io_uring_sqe.cancel_flags, IORING_ASYNC_CANCEL_*).
const (
	CancelAll     uint32 = 1 << 0 // every match, not just the first (5.19)
	CancelFd      uint32 = 1 << 1 // match on the fd instead of user_data (5.19)
	CancelAny     uint32 = 1 << 2 // match every request (5.19)
	CancelFdFixed uint32 = 1 << 3 // the fd is a registered file slot (5.19)
)

// PrepCancel prepares the cancellation of the in-flight request whose
// user_data is target (ASYNC_CANCEL, Linux 5.5), or of the requests flags
// select. Res is 0 when a request was cancelled (it completes with
// -ECANCELED), -ENOENT when none matched (not issued yet, or already
// complete), -EALREADY when it was running and could only be signalled.
func (s *SQE) PrepCancel(target uint64, flags uint32, userData uint64) {
	s.prep(OpAsyncCancel, -1, target, 0, 0, userData)
	s.OpFlags = flags
}
