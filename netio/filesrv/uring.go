package filesrv

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"syscall"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

// The io_uring method.
//
// A response is cut into chunks. Each chunk is a READ_FIXED into a
// registered buffer linked to a SEND of that buffer, and Depth such pairs
// are linked into one chain per io_uring_enter, which submits the chain
// and waits for all of its completions. The sends must be linked: two
// SENDs in flight on one TCP socket are not ordered (when the socket is
// full both wait for space, and either may go first), and a link is the
// only order io_uring keeps. A READ links to its SEND so that the send
// goes without a trip back to user space, and a short READ (the file
// shrank) breaks the chain, so that no stale buffer is sent. The reads are
// served from the page cache inline, so there is nothing to overlap them
// with that the chain does not already overlap; Depth buys fewer
// io_uring_enter calls per MB, and its buffers cap the memory a
// connection pins at Depth × Chunk. After the last SEND of a response the
// chain also holds the RECV of the next request, so that a small file
// costs one io_uring_enter per request.
//
// SENDs carry MSG_WAITALL: io_uring then finishes a partial send itself
// (Linux 5.18) instead of completing it short, which would break the
// chain.

// Kinds of request, in the high half of user_data; the low half is the
// buffer index.
const (
	udRead = 1 + iota
	udSend
	udRecv
)

func ud(kind, i int) uint64 { return uint64(kind)<<32 | uint64(i) }

// reqBufLen is the receive buffer for request bytes.
const reqBufLen = 64

// uringConn is one connection's ring and buffers, owned by the
// connection's locked goroutine.
type uringConn struct {
	ring     *uring.Ring
	mem      []byte   // off-heap: the buffers and the request buffer
	bufs     [][]byte // hdrLen + chunk each, registered
	req      []byte   // reqBufLen bytes
	cqes     []uring.CQE
	chunk    int
	depth    int
	readWant []int   // per buffer: the bytes its READ asks for
	readOff  []int64 // and where
	sendWant []int
	base     int64 // ring.Syscalls() already counted in some response
	retries  int64 // io_uring_enter calls that repeated an interrupted wait, not yet counted
}

// newURingConn sets up a ring for 2×depth+1 requests and registers depth
// buffers of hdrLen+chunk bytes. The caller is locked to its thread.
func newURingConn(chunk, depth int) (*uringConn, error) {
	entries := uint32(1) << bits.Len32(uint32(2*depth+1))
	r, err := uring.New(entries, uring.Options{
		CQSize: 2 * entries, SubmitAll: true,
		CoopTaskrun: true, TaskrunFlag: true, SingleIssuer: true, DeferTaskrun: true, NoSQArray: true,
	})
	if err != nil {
		return nil, fmt.Errorf("io_uring setup: %w", err)
	}
	u := &uringConn{ring: r, chunk: chunk, depth: depth,
		readWant: make([]int, depth), readOff: make([]int64, depth), sendWant: make([]int, depth),
		cqes: make([]uring.CQE, r.CQEntries())}
	bl := hdrLen + chunk
	u.mem, err = sys.MmapAnon(depth*bl + reqBufLen)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("mmap buffers: %w", err)
	}
	for i := 0; i < depth; i++ {
		u.bufs = append(u.bufs, u.mem[i*bl:(i+1)*bl:(i+1)*bl])
	}
	u.req = u.mem[depth*bl : depth*bl+reqBufLen]
	if err := r.RegisterBuffers(u.bufs); err != nil {
		u.close()
		return nil, fmt.Errorf("%w (raise `ulimit -l`)", err)
	}
	return u, nil
}

// close tears the ring down (nothing is in flight: every submission is
// reaped before serveURing returns) and then frees the buffers.
func (u *uringConn) close() {
	u.ring.Close()
	if u.mem != nil {
		sys.Munmap(u.mem)
		u.mem = nil
	}
}

// serveURing answers c's requests through its own ring.
func (s *server) serveURing(c *conn) error {
	u, err := newURingConn(s.cfg.Chunk, s.cfg.Depth)
	if err != nil {
		return err
	}
	defer u.close()
	u.base = u.ring.Syscalls()
	n, err := u.recv(c.fd)
	if err != nil {
		return err
	}
	var batch [reqBufLen]byte
	for {
		if n == 0 {
			return nil
		}
		// Copy the requests out: the next RECV reuses u.req.
		reqs := batch[:copy(batch[:], u.req[:n])]
		n = -1
		for i, b := range reqs {
			last := i == len(reqs)-1
			switch b {
			case reqGet:
				r, err := u.respond(s, c, last)
				if err != nil {
					return err
				}
				if last {
					n = r
				}
			case reqStats:
				if err := s.sendStats(c); err != nil {
					return err
				}
			default:
				return fmt.Errorf("protocol: unknown request %q", b)
			}
		}
		if n < 0 { // the last request was not a file: no RECV went with it
			if n, err = u.recv(c.fd); err != nil {
				return err
			}
		}
	}
}

// recv waits for request bytes with one RECV on its own.
func (u *uringConn) recv(fd int) (int, error) {
	sqe := u.ring.GetSQE()
	sqe.PrepRecv(int32(fd), u.req, 0, ud(udRecv, 0))
	var res int32
	err := u.submitAndReap(1, func(c *uring.CQE) error {
		res = c.Res
		return nil
	})
	if err != nil {
		return 0, err
	}
	if res < 0 {
		return 0, connErr("recv", syscall.Errno(-res))
	}
	return int(res), nil
}

// submitAndReap submits what is prepared and reaps exactly n completions,
// calling fn for each; fn's first error is returned after all n are in,
// so that nothing is left in flight.
func (u *uringConn) submitAndReap(n int, fn func(c *uring.CQE) error) error {
	// One io_uring_enter submits and waits for all n; any more are
	// retries of a wait a signal cut short (Stats.Retries).
	calls := u.ring.Syscalls()
	defer func() { u.retries += max(u.ring.Syscalls()-calls-1, 0) }()
	var first error
	for got := 0; got < n; {
		if u.ring.CQReady() == 0 || u.ring.SQReady() > 0 {
			if _, err := u.ring.SubmitAndWait(uint32(n - got)); err != nil {
				// The ring itself failed: what was submitted cannot be
				// reaped. Leave the buffers mapped rather than risk the
				// kernel writing into freed memory.
				u.mem = nil
				return err
			}
		}
		k := u.ring.PeekBatch(u.cqes[:min(len(u.cqes), n-got)])
		for i := 0; i < k; i++ {
			if err := fn(&u.cqes[i]); err != nil && first == nil {
				first = err
			}
		}
		u.ring.Advance(k)
		got += k
	}
	return first
}

// respond sends one response as chains of read→send pairs. With
// withRecv, the last chain ends with the RECV of the next request, whose
// result it returns.
//
// A response is counted when it is complete. One whose last chain holds
// the next request's RECV completes while that io_uring_enter waits for
// the client's next request, which may never come while the client takes
// the server's counters, so it is counted just before that
// io_uring_enter (which is counted in it), and uncounted if it fails.
func (u *uringConn) respond(s *server, c *conn, withRecv bool) (int, error) {
	fd := c.fd
	size := s.size
	var off int64
	recvRes := 0
	var early, earlyRetries int64 // system calls counted ahead, when the response was
	for first := true; first || off < size; {
		var last *uring.SQE
		nsqe := 0
		for j := 0; j < u.depth && (first || off < size); j++ {
			n := int(min(int64(u.chunk), size-off))
			buf := u.bufs[j]
			start := hdrLen
			if first {
				binary.LittleEndian.PutUint64(buf[:hdrLen], uint64(size))
				start = 0
				first = false
			}
			u.readWant[j], u.readOff[j] = n, off
			if n > 0 {
				sqe := u.ring.GetSQE()
				sqe.PrepReadFixed(int32(s.fd), buf[hdrLen:hdrLen+n], uint64(off), uint16(j), ud(udRead, j))
				sqe.SetFlags(uring.SQEIOLink)
				nsqe++
			}
			u.sendWant[j] = hdrLen + n - start
			last = u.ring.GetSQE()
			last.PrepSend(int32(fd), buf[start:hdrLen+n], sys.MSG_WAITALL|sys.MSG_NOSIGNAL, ud(udSend, j))
			last.SetFlags(uring.SQEIOLink)
			nsqe++
			off += int64(n)
		}
		if withRecv && off >= size {
			last = u.ring.GetSQE()
			last.PrepRecv(int32(fd), u.req, 0, ud(udRecv, 0))
			nsqe++
			next := u.ring.Syscalls() + 1
			early = c.pending + next - u.base
			earlyRetries = c.retried + u.retries
			u.base, c.pending, c.retried, u.retries = next, 0, 0, 0
			s.bytes.Add(size) // the response count last, as in done
			s.syscalls.Add(early)
			s.retries.Add(earlyRetries)
			s.responses.Add(1)
		}
		last.Flags &^= uring.SQEIOLink
		err := u.submitAndReap(nsqe, func(c *uring.CQE) error {
			j := int(c.UserData & 0xffffffff)
			switch c.UserData >> 32 {
			case udRead:
				switch {
				case c.Res == -int32(syscall.ECANCELED):
					return nil // an earlier link failed: that is the error
				case c.Res < 0:
					return s.readErr("read", syscall.Errno(-c.Res))
				case int(c.Res) < u.readWant[j]:
					// The send linked to it is cancelled; what went
					// before is out: the client sees the cut.
					return s.shrank(u.readOff[j] + int64(c.Res))
				}
			case udSend:
				switch {
				case c.Res == -int32(syscall.ECANCELED):
					return nil
				case c.Res < 0:
					return connErr("send", syscall.Errno(-c.Res))
				case int(c.Res) != u.sendWant[j]:
					return fmt.Errorf("send: %d of %d bytes", c.Res, u.sendWant[j])
				}
			case udRecv:
				if c.Res < 0 {
					if c.Res == -int32(syscall.ECANCELED) {
						return nil
					}
					return connErr("recv", syscall.Errno(-c.Res))
				}
				recvRes = int(c.Res)
			}
			return nil
		})
		if err != nil {
			if early > 0 {
				s.responses.Add(-1)
				s.bytes.Add(-size)
				s.syscalls.Add(-early)
				s.retries.Add(-earlyRetries)
			}
			return 0, err
		}
	}
	if early == 0 {
		c.pending += u.ring.Syscalls() - u.base
		u.base = u.ring.Syscalls()
		c.retried += u.retries
		u.retries = 0
		s.done(c)
	}
	return recvRes, nil
}
