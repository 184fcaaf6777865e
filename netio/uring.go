package netio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

func init() { register("io_uring", listenUring) }

// The io_uring engine is the epoll engine's design with the readiness
// loop replaced by a completion loop: Config.Loops loops, each a goroutine
// locked to its OS thread that owns one ring, one SO_REUSEPORT listener,
// one provided buffer ring, one eventfd and its connections. Loops share
// nothing but the connection count that enforces MaxConns.
//
// The steady state of a connection costs no system call of its own. A
// multishot ACCEPT posts a completion (CQE) per new connection; each
// connection has one multishot RECV that takes a buffer from the loop's
// provided buffer ring for every chunk that arrives and posts a CQE naming
// it; the loop sends the chunk back with a SEND straight from that buffer
// (no copy in user space: the kernel copies it into the socket) and gives
// the buffer back to the ring when the SEND's CQE says it went. Every
// request prepared while the loop walks a batch of CQEs goes to the kernel
// in the one io_uring_enter that also waits for the next batch, so under
// load a thousand connections' echoes cost one system call.
//
// Kernel features, with the Linux version each needs:
//
//   - multishot ACCEPT: 5.19; provided buffer rings: 5.19; multishot RECV
//     with a buffer group: 6.0. Listen probes for them (by trying a
//     multishot recv on a socket pair) and fails with ErrNotSupported
//     without them. SEND, RECV, ACCEPT, CLOSE: 5.6; SHUTDOWN: 5.11;
//     ASYNC_CANCEL by fd: 5.19.
//   - SINGLE_ISSUER (6.0) and DEFER_TASKRUN (6.1): the loop's thread is the
//     only submitter, and the kernel runs completion work (the receive
//     into a buffer, the CQE) only when that thread enters the ring to
//     wait, in one batch, instead of interrupting it. COOP_TASKRUN (5.19)
//     and TASKRUN_FLAG where DEFER_TASKRUN is refused. uring.New steps
//     these down when the kernel refuses them.
//   - the multishot RECV byte limits (sqe->len per receive, sqe->optlen
//     over the request's life, Linux 6.16): exact backpressure with
//     multishot RECVs, see below. Probed at Listen; without them the
//     engine arms single RECVs instead.
//   - fixed files (Config.FixedFiles): ACCEPT into a sparse registered
//     file table (5.19), so that connections are direct descriptors that
//     cost no entry in the process's fd table and no fd lookup per
//     request. The table has min(MaxConns, RLIMIT_NOFILE) slots per loop
//     (the kernel caps it at RLIMIT_NOFILE): past that, ACCEPT fails with
//     ENFILE and the loop backs off as for EMFILE.
//   - SQPOLL (Config.SQPoll): a kernel thread per ring polls the SQ, so
//     submitting costs no system call, at the price of a core that the
//     thread keeps busy while the loop is (and that the process's CPU
//     time does not show).
//
// Backpressure: a connection holds at most Config.BufSize bytes received
// and not yet sent, exactly. With the RECV limits the loop arms a
// connection's RECV only when the budget left (BufSize minus what it
// holds) has room for at least one receive of n = min(provided buffer
// size, BufSize) bytes and a quarter of BufSize, with receives of at most
// n bytes and a limit of budget-n+1: the kernel ends the RECV with the
// receive that reaches the limit, so what the connection holds never
// exceeds BufSize. When the peer does not read, the SEND waits in the
// kernel, the RECV stays unarmed, the socket's receive queue fills and
// TCP's window closes on the writer. Without the limits (Linux 6.0 to
// 6.15) the loop uses single RECVs of one receive each, re-armed after
// each CQE while a receive's worth of budget is left: a RECV more per
// message, but the same exact bound. (Cancelling a multishot RECV at the
// bound does not bound it: while data is waiting the kernel fills buffer
// after buffer within one io_uring_enter, hundreds of KiB on loopback,
// before the loop sees a CQE.) A connection also holds at most a fixed
// number of buffers (twice what BufSize fills, at least 4), its multishot
// RECV cancelled past that, so that a peer trickling one byte at a time
// cannot take a whole buffer per byte.
//
// The provided buffer ring is shared by a loop's connections: 4096
// buffers of 4 KiB (16 MiB of address space per loop, resident as it is
// used). A 4 KiB buffer takes a 64-byte message or a 64 KiB stream in 16
// receives, and the ring holds the in-flight data of 4096 connections
// with a message each. When it runs dry a RECV ends with ENOBUFS; the
// connection waits in a queue and its RECV is re-armed once buffers come
// back. The per-connection cap keeps one slow reader from taking more
// than its share, but it is a cap, not a reservation: with the default 64
// KiB BufSize, 256 connections whose peers write and never read hold the
// whole ring, and the loop's other connections then wait for buffers
// until those peers read or go (their data stays in the kernel's socket
// queues meanwhile; nothing is lost).
//
// Sends: a connection has at most one SEND in flight, so its echo goes
// out in order without links; chunks that arrive meanwhile queue behind
// it and go together in one SENDMSG (up to 16 buffers). Sends carry
// MSG_WAITALL, so a send the socket cannot take at once is finished by
// the kernel (which waits for room) rather than returned short; a short
// result after an error is still handled (the rest is sent, or the
// connection closed).
//
// user_data: an op tag (8 bits), a generation (24 bits) and an index into
// the loop's connection table (32 bits), never a Go pointer. A slot is
// reused only after the CQEs of all its requests have been reaped, so a
// CQE for a freed slot means a bug; the generation catches it anyway, and
// the CQE is dropped (its buffer, if any, given back).
//
// Closing: the loop cancels the connection's requests (ASYNC_CANCEL by
// fd), waits for their last CQEs, gives its queued buffers back, then
// closes the socket with a CLOSE request (batched like the rest) and frees
// the slot. Memory the kernel may still write to (buffers, iovecs, the
// eventfd word, the timer) is off the Go heap and lives until the loop
// has reaped every request.
//
// Half-close: after the peer's FIN (a RECV result of 0) the loop sends
// what it holds and closes, which sends our FIN after the data. Shutdown
// stops accepting (cancels the ACCEPT, then closes the listener), cancels
// every RECV, sends what each connection holds, half-closes it with
// SHUTDOWN(SHUT_WR), then reads and drops whatever the peer still sends
// until it closes. Shutdown wakes each loop through an eventfd the loop
// keeps a READ posted on.
type uringServer struct {
	cfg   Config
	addr  netip.AddrPort
	loops []*uloop

	// open counts the connections served by all loops, for MaxConns.
	open atomic.Int64
	// mode is what Shutdown asks of the loops: uringRun, then uringDrain,
	// then uringForce; it only grows. Each change is followed by a write
	// to every loop's eventfd.
	mode atomic.Int32

	wg       sync.WaitGroup // one per loop
	shutdown onceErr

	errMu   sync.Mutex
	loopErr error
}

const (
	uringRun int32 = iota
	uringDrain
	uringForce
)

// uringParams are the sizes a server is built with; tests shrink them
// through uringTestParams.
type uringParams struct {
	bufEntries  int  // provided buffers per loop (a power of two)
	bufSize     int  // bytes per provided buffer
	fileSlots   int  // fixed-file table size per loop (0: min(MaxConns, RLIMIT_NOFILE))
	noRecvLimit bool // single RECVs, as on kernels without the multishot RECV limits
}

var defaultUringParams = uringParams{bufEntries: 4096, bufSize: 4096}

// uringTestParams, when set, replaces defaultUringParams for the next
// Listen; only tests set it.
var uringTestParams *uringParams

// uringProbe is the result of probing the kernel for what the engine
// needs, once per process.
var uringProbe struct {
	once      sync.Once
	err       error // not nil: the engine cannot run here
	recvLimit bool  // the multishot RECV limits work
}

func listenUring(cfg Config, ap netip.AddrPort) (Server, error) {
	if err := uringSupported(); err != nil {
		return nil, err
	}
	p := defaultUringParams
	if uringTestParams != nil {
		p = *uringTestParams
	}
	recvLimit := uringProbe.recvLimit && !p.noRecvLimit
	if cfg.FixedFiles && p.fileSlots == 0 {
		soft, _, err := sys.Nofile()
		if err != nil {
			return nil, fmt.Errorf("io_uring server: RLIMIT_NOFILE: %w", err)
		}
		p.fileSlots = int(min(uint64(cfg.MaxConns)+64, soft, 1<<20))
	}
	lfds, bound, err := sys.ListenTCPGroup(ap, cfg.Loops, Backlog)
	if err != nil {
		return nil, fmt.Errorf("io_uring server: %w", err)
	}
	s := &uringServer{cfg: cfg, addr: bound}
	for i, lfd := range lfds {
		efd, err := sys.Eventfd(0, sys.EFD_CLOEXEC)
		if err != nil {
			for _, fd := range lfds {
				sys.Close(fd)
			}
			s.closeEventfds()
			return nil, fmt.Errorf("io_uring server on %s: eventfd: %w", bound, err)
		}
		// Accepted sockets inherit TCP_NODELAY from the listener, so no
		// setsockopt per connection (which a direct descriptor could not
		// take anyway). Go's net sets it on every connection: so do we,
		// so that the engines compare like for like.
		sys.SetNoDelay(lfd)
		s.loops = append(s.loops, newUloop(s, i, lfd, efd, p, recvLimit))
	}
	ready := make(chan error, len(s.loops))
	s.wg.Add(len(s.loops))
	for _, l := range s.loops {
		go l.run(ready)
	}
	var first error
	for range s.loops {
		if err := <-ready; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		// Loops that started are running: stop them the hard way.
		s.command(uringForce)
		s.wg.Wait()
		s.closeEventfds()
		return nil, first
	}
	return s, nil
}

// uringSupported says why the engine cannot run here, wrapping
// ErrNotSupported, or returns nil.
func uringSupported() error {
	r := features.Probe()
	if !r.IOURing.Available {
		return fmt.Errorf("io_uring server: %w: %s", ErrNotSupported, r.IOURing.Reason)
	}
	for _, op := range []string{"ACCEPT", "RECV", "SEND", "SENDMSG", "ASYNC_CANCEL", "CLOSE", "SHUTDOWN", "READ", "TIMEOUT"} {
		if !r.HasOp(op) {
			return fmt.Errorf("io_uring server: %w: kernel %s lacks IORING_OP_%s", ErrNotSupported, r.Kernel, op)
		}
	}
	uringProbe.once.Do(func() {
		uringProbe.recvLimit, uringProbe.err = probeRecvMultishot()
	})
	return uringProbe.err
}

// probeRecvMultishot tries a multishot RECV into a provided buffer ring
// on a socket pair, first with the byte limits and then without. It
// reports whether the limits work, or an error wrapping ErrNotSupported
// when multishot RECV does not (Linux before 6.0) or buffer rings cannot
// be registered (before 5.19).
func probeRecvMultishot() (limits bool, err error) {
	notSupported := func(why string, err error) (bool, error) {
		return false, fmt.Errorf("io_uring server: %w: %s: %v", ErrNotSupported, why, err)
	}
	r, err := uring.New(8, uring.Options{})
	if err != nil {
		return notSupported("io_uring setup", err)
	}
	defer r.Close()
	br, err := r.RegisterBufRing(0, 2, 64)
	if err != nil {
		return notSupported("provided buffer rings (Linux 5.19)", err)
	}
	defer br.Close()
	fds, err := sys.Socketpair()
	if err != nil {
		return false, fmt.Errorf("io_uring server: probe: socketpair: %w", err)
	}
	defer sys.Close(fds[0])
	defer sys.Close(fds[1])
	cqes := make([]uring.CQE, 4)
	// reap waits for the CQE with user_data ud, and returns it.
	reap := func(ud uint64) (uring.CQE, error) {
		for {
			if _, err := r.SubmitAndWait(1); err != nil {
				return uring.CQE{}, err
			}
			n := r.PeekBatch(cqes)
			r.Advance(n)
			for _, c := range cqes[:n] {
				if c.UserData == ud {
					return c, nil
				}
				if c.Flags&uring.CQEFBuffer != 0 {
					br.Recycle(c.BufferID())
					br.Publish()
				}
			}
		}
	}
	for _, withLimits := range []bool{true, false} {
		// A byte is waiting, so the RECV completes at once: with the
		// limit of 1 its first CQE is also its last; without, it stays
		// armed and is cancelled.
		if _, err := sys.Write(fds[1], []byte{1}); err != nil {
			return false, fmt.Errorf("io_uring server: probe: write: %w", err)
		}
		sqe := r.GetSQE()
		sqe.PrepRecvMultishot(int32(fds[0]), br.Group(), 0, 1)
		if withLimits {
			// The limits come with bundles (Linux 6.10) on every kernel
			// that has them; the engine uses them together.
			sqe.IOPrio |= uring.RecvsendBundle
			sqe.SetRecvLen(64)
			sqe.SetRecvLimit(1)
		}
		c, err := reap(1)
		if err != nil {
			return false, fmt.Errorf("io_uring server: probe: %w", err)
		}
		if c.Res == -int32(sys.EINVAL) {
			if withLimits {
				// Drain the byte: the next try finds one byte waiting.
				sys.Read(fds[0], make([]byte, 1))
				continue
			}
			return notSupported("multishot recv (Linux 6.0)", sys.EINVAL)
		}
		if c.Res != 1 || c.Flags&uring.CQEFBuffer == 0 {
			return false, fmt.Errorf("io_uring server: probe: multishot recv: result %d, flags %#x, want 1 byte in a provided buffer", c.Res, c.Flags)
		}
		br.Recycle(c.BufferID())
		br.Publish()
		if c.More() {
			r.GetSQE().PrepCancel(1, 0, 2)
			for c.More() {
				if c, err = reap(1); err != nil {
					return false, fmt.Errorf("io_uring server: probe: %w", err)
				}
			}
		}
		return withLimits, nil
	}
	panic("unreachable")
}

func (s *uringServer) Engine() string       { return "io_uring" }
func (s *uringServer) Addr() netip.AddrPort { return s.addr }

// Stats sums the loops' counters, each in a cache line of its own.
func (s *uringServer) Stats() Stats {
	var t Stats
	for _, l := range s.loops {
		st := l.st.snapshot()
		t.Accepted += st.Accepted
		t.Refused += st.Refused
		t.Active += st.Active
		t.Resets += st.Resets
		t.BytesIn += st.BytesIn
		t.BytesOut += st.BytesOut
	}
	return t
}

// Shutdown tells every loop to stop accepting and drain its connections,
// and, if ctx ends first, to close everything at once.
func (s *uringServer) Shutdown(ctx context.Context) error {
	return s.shutdown.do(func() error {
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		var err error
		if ctx.Err() != nil {
			s.command(uringForce)
			<-done
			err = ctx.Err()
		} else {
			s.command(uringDrain)
			select {
			case <-done:
			case <-ctx.Done():
				s.command(uringForce)
				<-done
				err = ctx.Err()
			}
		}
		s.closeEventfds()
		if err == nil {
			s.errMu.Lock()
			err = s.loopErr
			s.errMu.Unlock()
		}
		return err
	})
}

// Close is Shutdown with no grace.
func (s *uringServer) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Shutdown(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// command raises the mode and wakes every loop to act on it.
func (s *uringServer) command(m int32) {
	s.mode.Store(m)
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	for _, l := range s.loops {
		if l.efd >= 0 {
			// EAGAIN (the counter is full) is fine: the loop is woken.
			sys.Write(l.efd, one[:])
		}
	}
}

// closeEventfds closes the loops' eventfds once every loop has exited
// (and reaped its READ on it), so that command never writes to a reused
// fd number.
func (s *uringServer) closeEventfds() {
	for _, l := range s.loops {
		if l.efd >= 0 {
			sys.Close(l.efd)
			l.efd = -1
		}
	}
}

// reserve takes a slot under MaxConns, or reports that none is free.
func (s *uringServer) reserve() bool {
	for {
		n := s.open.Load()
		if n >= int64(s.cfg.MaxConns) {
			return false
		}
		if s.open.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (s *uringServer) fail(err error) {
	s.errMu.Lock()
	if s.loopErr == nil {
		s.loopErr = err
	}
	s.errMu.Unlock()
}
