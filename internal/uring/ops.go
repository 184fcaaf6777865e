package uring

import "strconv"

// Op is an io_uring opcode (IORING_OP_*).
type Op uint8

// The opcodes up to Linux 6.15. Only some have prep helpers; the rest are
// named so that probes print readably.
const (
	OpNop Op = iota
	OpReadv
	OpWritev
	OpFsync
	OpReadFixed
	OpWriteFixed
	OpPollAdd
	OpPollRemove
	OpSyncFileRange
	OpSendmsg
	OpRecvmsg
	OpTimeout
	OpTimeoutRemove
	OpAccept
	OpAsyncCancel
	OpLinkTimeout
	OpConnect
	OpFallocate
	OpOpenat
	OpClose
	OpFilesUpdate
	OpStatx
	OpRead
	OpWrite
	OpFadvise
	OpMadvise
	OpSend
	OpRecv
	OpOpenat2
	OpEpollCtl
	OpSplice
	OpProvideBuffers
	OpRemoveBuffers
	OpTee
	OpShutdown
	OpRenameat
	OpUnlinkat
	OpMkdirat
	OpSymlinkat
	OpLinkat
	OpMsgRing
	OpFsetxattr
	OpSetxattr
	OpFgetxattr
	OpGetxattr
	OpSocket
	OpUringCmd
	OpSendZC
	OpSendmsgZC
	OpReadMultishot
	OpWaitid
	OpFutexWait
	OpFutexWake
	OpFutexWaitv
	OpFixedFdInstall
	OpFtruncate
	OpBind
	OpListen
	OpRecvZC
	OpEpollWait
	OpReadvFixed
	OpWritevFixed
)

var opNames = [...]string{
	"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED", "WRITE_FIXED", "POLL_ADD",
	"POLL_REMOVE", "SYNC_FILE_RANGE", "SENDMSG", "RECVMSG", "TIMEOUT",
	"TIMEOUT_REMOVE", "ACCEPT", "ASYNC_CANCEL", "LINK_TIMEOUT", "CONNECT",
	"FALLOCATE", "OPENAT", "CLOSE", "FILES_UPDATE", "STATX", "READ", "WRITE",
	"FADVISE", "MADVISE", "SEND", "RECV", "OPENAT2", "EPOLL_CTL", "SPLICE",
	"PROVIDE_BUFFERS", "REMOVE_BUFFERS", "TEE", "SHUTDOWN", "RENAMEAT",
	"UNLINKAT", "MKDIRAT", "SYMLINKAT", "LINKAT", "MSG_RING", "FSETXATTR",
	"SETXATTR", "FGETXATTR", "GETXATTR", "SOCKET", "URING_CMD", "SEND_ZC",
	"SENDMSG_ZC", "READ_MULTISHOT", "WAITID", "FUTEX_WAIT", "FUTEX_WAKE",
	"FUTEX_WAITV", "FIXED_FD_INSTALL", "FTRUNCATE", "BIND", "LISTEN", "RECV_ZC",
	"EPOLL_WAIT", "READV_FIXED", "WRITEV_FIXED",
}

// String is the opcode's name without the IORING_OP_ prefix ("READ_FIXED"),
// or "OP_<n>" for opcodes newer than this package.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "OP_" + strconv.Itoa(int(o))
}

// OpSet is the set of opcodes a kernel supports, from Ring.Probe.
type OpSet struct {
	bits [probeOps / 64]uint64
	// LastOp is the highest opcode the kernel knows (supported or not).
	LastOp Op
}

// Has reports whether op is supported.
func (s *OpSet) Has(op Op) bool { return s.bits[op/64]&(1<<(op%64)) != 0 }

func (s *OpSet) add(op Op) { s.bits[op/64] |= 1 << (op % 64) }

// List returns the supported opcodes in ascending order.
func (s *OpSet) List() []Op {
	var ops []Op
	for i := 0; i < probeOps; i++ {
		if s.Has(Op(i)) {
			ops = append(ops, Op(i))
		}
	}
	return ops
}
