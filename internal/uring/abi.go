package uring

// The io_uring ABI, as in include/uapi/linux/io_uring.h. Sizes are checked
// by TestABISizes.

// Setup flags (io_uring_params.flags).
const (
	SetupIOPoll       uint32 = 1 << 0
	SetupSQPoll       uint32 = 1 << 1
	SetupSQAff        uint32 = 1 << 2
	SetupCQSize       uint32 = 1 << 3
	SetupClamp        uint32 = 1 << 4
	SetupAttachWQ     uint32 = 1 << 5
	SetupRDisabled    uint32 = 1 << 6
	SetupSubmitAll    uint32 = 1 << 7
	SetupCoopTaskrun  uint32 = 1 << 8
	SetupTaskrunFlag  uint32 = 1 << 9
	SetupSQE128       uint32 = 1 << 10
	SetupCQE32        uint32 = 1 << 11
	SetupSingleIssuer uint32 = 1 << 12
	SetupDeferTaskrun uint32 = 1 << 13
	SetupNoMmap       uint32 = 1 << 14
	SetupRegisteredFD uint32 = 1 << 15
	SetupNoSQArray    uint32 = 1 << 16
)

// setupFlagNames names the setup flags, in bit order.
var setupFlagNames = [...]string{
	"IOPOLL", "SQPOLL", "SQ_AFF", "CQSIZE", "CLAMP", "ATTACH_WQ", "R_DISABLED",
	"SUBMIT_ALL", "COOP_TASKRUN", "TASKRUN_FLAG", "SQE128", "CQE32",
	"SINGLE_ISSUER", "DEFER_TASKRUN", "NO_MMAP", "REGISTERED_FD_ONLY", "NO_SQARRAY",
}

// SetupFlagName returns the name of one setup flag bit ("SQPOLL"), without
// the IORING_SETUP_ prefix.
func SetupFlagName(flag uint32) string {
	for i, n := range setupFlagNames {
		if flag == 1<<i {
			return n
		}
	}
	return "unknown"
}

// Feature bits (io_uring_params.features), set by the kernel.
const (
	FeatSingleMmap     uint32 = 1 << 0
	FeatNoDrop         uint32 = 1 << 1
	FeatSubmitStable   uint32 = 1 << 2
	FeatRWCurPos       uint32 = 1 << 3
	FeatCurPersonality uint32 = 1 << 4
	FeatFastPoll       uint32 = 1 << 5
	FeatPoll32Bits     uint32 = 1 << 6
	FeatSQPollNonfixed uint32 = 1 << 7
	FeatExtArg         uint32 = 1 << 8
	FeatNativeWorkers  uint32 = 1 << 9
	FeatRsrcTags       uint32 = 1 << 10
	FeatCQESkip        uint32 = 1 << 11
	FeatLinkedFile     uint32 = 1 << 12
)

// io_uring_enter flags.
const (
	EnterGetEvents      uint32 = 1 << 0
	EnterSQWakeup       uint32 = 1 << 1
	EnterSQWait         uint32 = 1 << 2
	EnterExtArg         uint32 = 1 << 3
	EnterRegisteredRing uint32 = 1 << 4
)

// SQ ring flags (*sq_off.flags), set by the kernel.
const (
	SQNeedWakeup uint32 = 1 << 0
	SQCQOverflow uint32 = 1 << 1
	SQTaskrun    uint32 = 1 << 2
)

// SQE flags (SQE.Flags).
const (
	SQEFixedFile      uint8 = 1 << 0
	SQEIODrain        uint8 = 1 << 1
	SQEIOLink         uint8 = 1 << 2
	SQEIOHardlink     uint8 = 1 << 3
	SQEAsync          uint8 = 1 << 4
	SQEBufferSelect   uint8 = 1 << 5
	SQECQESkipSuccess uint8 = 1 << 6
)

// mmap offsets of the rings.
const (
	offSQRing uint64 = 0
	offCQRing uint64 = 0x8000000
	offSQEs   uint64 = 0x10000000
)

// io_uring_register opcodes.
const (
	registerBuffers      uint32 = 0
	unregisterBuffers    uint32 = 1
	registerFiles        uint32 = 2
	unregisterFiles      uint32 = 3
	registerFilesUpdate  uint32 = 6
	registerProbe        uint32 = 8
	registerFiles2       uint32 = 13
	registerFilesUpdate2 uint32 = 14
)

// rsrcRegisterSparse is IORING_RSRC_REGISTER_SPARSE.
const rsrcRegisterSparse uint32 = 1 << 0

// opSupported is IO_URING_OP_SUPPORTED in io_uring_probe_op.flags.
const opSupported uint16 = 1 << 0

// SQOffsets is struct io_sqring_offsets (40 bytes).
type SQOffsets struct {
	Head        uint32
	Tail        uint32
	RingMask    uint32
	RingEntries uint32
	Flags       uint32
	Dropped     uint32
	Array       uint32
	Resv1       uint32
	UserAddr    uint64
}

// CQOffsets is struct io_cqring_offsets (40 bytes).
type CQOffsets struct {
	Head        uint32
	Tail        uint32
	RingMask    uint32
	RingEntries uint32
	Overflow    uint32
	CQEs        uint32
	Flags       uint32
	Resv1       uint32
	UserAddr    uint64
}

// Params is struct io_uring_params (120 bytes).
type Params struct {
	SQEntries    uint32
	CQEntries    uint32
	Flags        uint32
	SQThreadCPU  uint32
	SQThreadIdle uint32
	Features     uint32
	WQFd         uint32
	Resv         [3]uint32
	SQOff        SQOffsets
	CQOff        CQOffsets
}

// SQE is struct io_uring_sqe (64 bytes). The union fields are named after
// their use for the read and open family: Off is also addr2, OpFlags is
// rw_flags/open_flags/statx_flags, FileIndex is also splice_fd_in.
type SQE struct {
	Opcode      Op
	Flags       uint8
	IOPrio      uint16
	Fd          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	FileIndex   uint32
	Addr3       uint64
	pad2        uint64
}

// CQE is struct io_uring_cqe (16 bytes). Res is the result: a byte count or
// file index on success, -errno on failure.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// rsrcRegister is struct io_uring_rsrc_register (32 bytes).
type rsrcRegister struct {
	Nr    uint32
	Flags uint32
	Resv2 uint64
	Data  uint64
	Tags  uint64
}

// filesUpdate is struct io_uring_files_update (16 bytes).
type filesUpdate struct {
	Offset uint32
	Resv   uint32
	Fds    uint64
}

// probeHeader is struct io_uring_probe without its flexible array (16 bytes).
type probeHeader struct {
	LastOp uint8
	OpsLen uint8
	Resv   uint16
	Resv2  [3]uint32
}

// probeOp is struct io_uring_probe_op (8 bytes).
type probeOp struct {
	Op    uint8
	Resv  uint8
	Flags uint16
	Resv2 uint32
}

// probeOps is how many op slots a probe asks for (the op field is a byte).
const probeOps = 256

// probeBuf is a probe with room for every op.
type probeBuf struct {
	probeHeader
	Ops [probeOps]probeOp
}
