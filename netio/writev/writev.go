package writev

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
	"github.com/iopath/iopath/netio/netresult"
)

// The four ways; see the package doc. Their names and order are
// netresult's, which the reports share.
const (
	Writes     = netresult.Writes
	Coalesced  = netresult.Coalesced
	NetBuffers = netresult.NetBuffers
	IOURing    = netresult.IOURing
)

var ways = netresult.WritevWays()

// Ways returns the names of the ways to send a response, in the order the
// reports show them.
func Ways() []string { return slices.Clone(ways) }

// DefaultParts are the part counts measured by default.
var DefaultParts = []int{1, 2, 4, 8, 16, 64}

// Defaults and bounds of Config.
const (
	DefaultMinPart   = 64
	DefaultMaxPart   = 1024
	DefaultResponses = 20000
	MaxParts         = 1024 // IOV_MAX: one writev
	MaxPartSize      = 1 << 20
)

// ErrNotSupported is wrapped by the error of a way that cannot run here
// (io_uring disabled or refused, or missing SENDMSG). A ring that cannot
// be made for want of descriptors or memory is that error, not this one
// (features.Classify). It is features.ErrNotSupported.
var ErrNotSupported = features.ErrNotSupported

// Config says what Run measures. The zero value measures every way and
// DefaultParts with DefaultResponses responses per run, once.
type Config struct {
	Ways      []string // default: Ways()
	Parts     []int    // part counts k (default: DefaultParts)
	MinPart   int      // smallest part (default DefaultMinPart; at least 8)
	MaxPart   int      // largest part (default DefaultMaxPart)
	Seed      uint64   // part sizes and content (0: 1)
	Responses int      // per run, when Duration is 0 (default DefaultResponses)
	Duration  time.Duration
	Rounds    int // runs of each (way, k), interleaved (default 1)
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Ways) == 0 {
		c.Ways = Ways()
	}
	if len(c.Parts) == 0 {
		c.Parts = DefaultParts
	}
	if c.MinPart == 0 {
		c.MinPart = DefaultMinPart
	}
	if c.MaxPart == 0 {
		c.MaxPart = max(DefaultMaxPart, c.MinPart)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Responses == 0 {
		c.Responses = DefaultResponses
	}
	if c.Rounds == 0 {
		c.Rounds = 1
	}
	for _, w := range c.Ways {
		if !slices.Contains(ways, w) {
			return c, fmt.Errorf("writev: unknown way %q (want one of %s)", w, strings.Join(ways, ", "))
		}
	}
	for _, k := range c.Parts {
		if k < 1 || k > MaxParts {
			return c, fmt.Errorf("writev: %d parts: want 1 to %d", k, MaxParts)
		}
	}
	switch {
	case c.MinPart < 8 || c.MaxPart < c.MinPart || c.MaxPart > MaxPartSize:
		return c, fmt.Errorf("writev: part sizes %d to %d: want 8 ≤ min ≤ max ≤ %d", c.MinPart, c.MaxPart, MaxPartSize)
	case c.Responses < 0 || c.Duration < 0 || c.Rounds < 0:
		return c, fmt.Errorf("writev: responses %d, duration %v, rounds %d: want positive", c.Responses, c.Duration, c.Rounds)
	}
	return c, nil
}

// Run measures cfg's ways and part counts, interleaved: for each round,
// for each k, every way once, each on a fresh loopback connection. It
// returns every run's result (netresult.WritevMedians reduces them). A
// run that fails has Err set and Verified false; Run's error joins those failures (except ways that are
// not supported here), or is ctx's.
func Run(ctx context.Context, cfg Config) ([]netresult.Writev, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var out []netresult.Writev
	var errs []error
	for range cfg.Rounds {
		for _, k := range cfg.Parts {
			for _, way := range cfg.Ways {
				if err := ctx.Err(); err != nil {
					return out, err
				}
				r, err := runOne(ctx, cfg, way, k)
				if err != nil {
					if ctx.Err() != nil {
						return out, ctx.Err()
					}
					r.Err = err.Error()
					if !errors.Is(err, ErrNotSupported) {
						errs = append(errs, fmt.Errorf("%s k=%d: %w", way, k, err))
					}
				}
				out = append(out, r)
			}
		}
	}
	return out, errors.Join(errs...)
}

// response is one k-part response: its parts (in memory the way sends
// from) and the expected bytes.
type response struct {
	sizes []int
	total int
	tmpl  []byte // the parts back to back, sequence number 0
}

func newResponse(cfg Config, k int) response {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(k)))
	r := response{sizes: make([]int, k)}
	for i := range r.sizes {
		r.sizes[i] = cfg.MinPart + rng.IntN(cfg.MaxPart-cfg.MinPart+1)
		r.total += r.sizes[i]
	}
	r.tmpl = make([]byte, r.total)
	for i := 0; i+8 <= len(r.tmpl); i += 8 {
		binary.LittleEndian.PutUint64(r.tmpl[i:], rng.Uint64())
	}
	for i := len(r.tmpl) &^ 7; i < len(r.tmpl); i++ {
		r.tmpl[i] = byte(rng.Uint32())
	}
	binary.LittleEndian.PutUint64(r.tmpl, 0)
	return r
}

// split cuts mem (at least r.total bytes) into parts holding the
// template's bytes.
func (r response) split(mem []byte) [][]byte {
	copy(mem, r.tmpl)
	parts := make([][]byte, len(r.sizes))
	off := 0
	for i, n := range r.sizes {
		parts[i] = mem[off : off+n : off+n]
		off += n
	}
	return parts
}

// pair is a loopback TCP connection: w sends, r is drained.
type pair struct{ w, r *net.TCPConn }

func newPair(ctx context.Context) (pair, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return pair{}, fmt.Errorf("writev: %w", err)
	}
	defer ln.Close()
	type acc struct {
		c   net.Conn
		err error
	}
	ch := make(chan acc, 1)
	go func() {
		c, err := ln.Accept()
		ch <- acc{c, err}
	}()
	var d net.Dialer
	w, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		a := <-ch
		if a.c != nil {
			a.c.Close()
		}
		return pair{}, fmt.Errorf("writev: %w", err)
	}
	a := <-ch
	if a.err != nil {
		w.Close()
		return pair{}, fmt.Errorf("writev: accept: %w", a.err)
	}
	return pair{w: w.(*net.TCPConn), r: a.c.(*net.TCPConn)}, nil
}

func (p pair) close() {
	p.w.Close()
	p.r.Close()
}

// reader drains c and checks it against n responses like r (or any
// number when n < 0) followed by EOF.
type reader struct {
	got  int64 // responses
	err  error
	done chan struct{}
}

func startReader(c *net.TCPConn, r response) *reader {
	rd := &reader{done: make(chan struct{})}
	go func() {
		defer close(rd.done)
		rd.got, rd.err = drain(c, r)
		if rd.err != nil {
			// Stop the sender: its writes now fail instead of
			// filling the socket and waiting for ever.
			c.Close()
		}
	}()
	return rd
}

// drain reads c to EOF, checking each response: its sequence number and
// every other byte. It returns the complete responses.
func drain(c io.Reader, r response) (int64, error) {
	cur := slices.Clone(r.tmpl)
	buf := make([]byte, 256<<10)
	var seq int64
	pos := 0
	for {
		n, err := c.Read(buf)
		b := buf[:n]
		for len(b) > 0 {
			m := min(len(b), r.total-pos)
			if !bytes.Equal(b[:m], cur[pos:pos+m]) {
				at := 0
				for at < m && b[at] == cur[pos+at] {
					at++
				}
				return seq, fmt.Errorf("writev: response %d: byte %d of %d differs (got %#02x, want %#02x)", seq, pos+at, r.total, b[at], cur[pos+at])
			}
			pos += m
			b = b[m:]
			if pos == r.total {
				seq++
				pos = 0
				binary.LittleEndian.PutUint64(cur, uint64(seq))
			}
		}
		if err == io.EOF {
			if pos != 0 {
				return seq, fmt.Errorf("writev: stream ended %d bytes into response %d", pos, seq)
			}
			return seq, nil
		}
		if err != nil {
			return seq, fmt.Errorf("writev: read: %w", err)
		}
	}
}

// runOne measures one way with k parts on a fresh connection.
func runOne(ctx context.Context, cfg Config, way string, k int) (netresult.Writev, error) {
	resp := newResponse(cfg, k)
	res := netresult.Writev{Way: way, K: k, RespBytes: resp.total, Runs: 1}
	if way == IOURing {
		if err := uringSupported(); err != nil {
			return res, err
		}
	}
	p, err := newPair(ctx)
	if err != nil {
		return res, err
	}
	defer p.close()
	stop := context.AfterFunc(ctx, func() { p.w.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	rd := startReader(p.r, resp)

	n := cfg.Responses
	if cfg.Duration > 0 {
		n = -1
	}
	m, serr := send(ctx, p.w, way, resp, n, cfg.Duration)
	if serr == nil {
		serr = p.w.CloseWrite()
	} else {
		// Unblock the reader: it cannot get to EOF through a broken
		// stream.
		p.r.Close()
	}
	<-rd.done
	res.Responses, res.Elapsed, res.Calls, res.Syscalls, res.CPU = m.responses, m.elapsed, m.calls, m.syscalls, m.cpu
	derive(&res)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if rd.err != nil { // the cause of a sender's broken pipe, if it has one
		return res, rd.err
	}
	if serr != nil {
		return res, serr
	}
	if rd.got != m.responses {
		return res, fmt.Errorf("writev: sent %d responses, the reader got %d", m.responses, rd.got)
	}
	res.Verified = true
	return res, nil
}

// derive computes r's figures per response from its counts; a single
// run is its own min and max.
func derive(r *netresult.Writev) {
	per := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return a / b
	}
	n := float64(r.Responses)
	r.NsPerResp = per(float64(r.Elapsed), n)
	r.SyscallsPerResp = per(float64(r.Syscalls), n)
	r.CPUNsPerResp = per(float64(r.CPU), n)
	r.CPUNsPerRespMin, r.CPUNsPerRespMax = r.CPUNsPerResp, r.CPUNsPerResp
}

// measured is what send saw.
type measured struct {
	responses, calls, syscalls int64
	cpu, elapsed               time.Duration
}

// send sends n responses (n < 0: for d from the first) one way, on a
// goroutine locked to its thread so that the thread's CPU and write
// counters are the sender's alone. The window starts when the sender
// does, not when send is called: on a busy machine the locked thread may
// start later than the whole window would have lasted.
func send(ctx context.Context, c *net.TCPConn, way string, r response, n int, d time.Duration) (measured, error) {
	type out struct {
		m   measured
		err error
	}
	ch := make(chan out, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		m, err := sendLocked(ctx, c, way, r, n, d)
		ch <- out{m, err}
	}()
	o := <-ch
	return o.m, o.err
}

// more reports whether response i is to be sent: i < n, or (n < 0)
// before until; never once ctx is done. A timed window sends at least its
// first 64 responses, however short it is.
func more(ctx context.Context, i int64, n int, until time.Time) bool {
	// Look at the clock and ctx every 64 responses only: a check per
	// response would be part of what is measured.
	if i%64 == 0 && (ctx.Err() != nil || (n < 0 && i > 0 && !time.Now().Before(until))) {
		return false
	}
	return n < 0 || i < int64(n)
}

func sendLocked(ctx context.Context, c *net.TCPConn, way string, r response, n int, d time.Duration) (m measured, err error) {
	if way == IOURing {
		return sendURing(ctx, c, r, n, d)
	}
	parts := r.split(make([]byte, r.total))
	var coalesced []byte
	if way == Coalesced {
		coalesced = make([]byte, 0, r.total)
	}
	tmp := make([][]byte, 0, len(parts))
	nb := new(net.Buffers)

	io0, err := openThreadIO()
	if err != nil {
		return m, err
	}
	defer io0.close()
	w0, err := io0.syscw()
	if err != nil {
		return m, err
	}
	cpu0, _ := sys.ThreadCPU()
	t0 := time.Now()
	until := t0.Add(d)
	var i int64
	for ; more(ctx, i, n, until); i++ {
		binary.LittleEndian.PutUint64(parts[0], uint64(i))
		switch way {
		case Writes:
			for _, p := range parts {
				m.calls++
				if _, err = c.Write(p); err != nil {
					break
				}
			}
		case Coalesced:
			coalesced = coalesced[:0]
			for _, p := range parts {
				coalesced = append(coalesced, p...)
			}
			m.calls++
			_, err = c.Write(coalesced)
		case NetBuffers:
			// WriteTo consumes the slice it is given: hand it a copy.
			tmp = append(tmp[:0], parts...)
			*nb = tmp
			m.calls++
			_, err = nb.WriteTo(c)
		}
		if err != nil {
			break
		}
	}
	m.elapsed = time.Since(t0)
	cpu1, _ := sys.ThreadCPU()
	w1, werr := io0.syscw()
	m.responses = i
	m.cpu = time.Duration(cpu1 - cpu0)
	if werr != nil && err == nil {
		err = werr
	}
	m.syscalls = w1 - w0
	if err != nil {
		return m, fmt.Errorf("writev: %s: %w", way, err)
	}
	return m, nil
}

// threadIO reads the calling thread's /proc/thread-self/io with one pread
// per reading, on a descriptor opened once, so that a reading adds no
// write to the count it reads.
type threadIO struct {
	fd  int
	buf [512]byte
}

func openThreadIO() (*threadIO, error) {
	fd, err := sys.Open("/proc/thread-self/io", sys.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("writev: counting write calls: %w", err)
	}
	return &threadIO{fd: fd}, nil
}

func (t *threadIO) close() { sys.Close(t.fd) }

// syscw is the thread's write(2)/writev(2) count so far.
func (t *threadIO) syscw() (int64, error) {
	n, e := sys.PreadOnce(t.fd, t.buf[:], 0)
	if e != 0 {
		return 0, fmt.Errorf("writev: read /proc/thread-self/io: %w", e)
	}
	return parseSyscw(t.buf[:n])
}

func parseSyscw(b []byte) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("writev: /proc/thread-self/io has no syscw line")
}

// Supported returns nil when way can run here, or an error wrapping
// ErrNotSupported that says why not (io_uring refused, or the kernel
// lacks IORING_OP_SENDMSG), or the probe's resource error. Run records
// such a way's error in its Results' Err and goes on with the others; a
// caller that wants to leave the way out beforehand asks this.
func Supported(way string) error {
	switch way {
	case IOURing:
		return uringSupported()
	case Writes, Coalesced, NetBuffers:
		return nil
	}
	return fmt.Errorf("writev: unknown way %q (have %s)", way, strings.Join(ways, ", "))
}

func uringSupported() error {
	if err := features.HaveOps("SENDMSG"); err != nil {
		return fmt.Errorf("writev: %s: %w", IOURing, err)
	}
	return nil
}

// sendURing sends each response with one SENDMSG of k iovecs, submitted
// and waited for in one io_uring_enter. The parts, iovecs and msghdr live
// off the Go heap, as the kernel reads them after the call returns when
// the socket is full.
func sendURing(ctx context.Context, c *net.TCPConn, r response, n int, d time.Duration) (m measured, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return m, err
	}
	fd := -1
	raw.Control(func(f uintptr) { fd = int(f) })
	ring, err := uring.New(4, uring.Options{SubmitAll: true, CoopTaskrun: true, TaskrunFlag: true,
		SingleIssuer: true, DeferTaskrun: true, NoSQArray: true})
	if err != nil {
		return m, fmt.Errorf("writev: %s: %w", IOURing, features.Classify(err))
	}
	defer ring.Close()
	k := len(r.sizes)
	iovOff := (r.total + 7) &^ 7
	msgOff := iovOff + k*int(unsafe.Sizeof(sys.Iovec{}))
	mem, err := sys.MmapAnon(msgOff + int(unsafe.Sizeof(sys.Msghdr{})))
	if err != nil {
		return m, fmt.Errorf("writev: mmap: %w", err)
	}
	parts := r.split(mem)
	iov := unsafe.Slice((*sys.Iovec)(unsafe.Pointer(&mem[iovOff])), k)
	for i, p := range parts {
		iov[i].Base = &p[0]
		iov[i].SetLen(len(p))
	}
	msg := (*sys.Msghdr)(unsafe.Pointer(&mem[msgOff]))
	msg.Iov = &iov[0]
	msg.SetIovlen(k)

	io0, err := openThreadIO()
	if err != nil {
		sys.Munmap(mem)
		return m, err
	}
	defer io0.close()
	w0, _ := io0.syscw()
	s0 := ring.Syscalls()
	var cqe [1]uring.CQE
	cpu0, _ := sys.ThreadCPU()
	t0 := time.Now()
	until := t0.Add(d)
	var i int64
	inflight := false
	for ; more(ctx, i, n, until); i++ {
		binary.LittleEndian.PutUint64(parts[0], uint64(i))
		sqe := ring.GetSQE()
		sqe.PrepSendmsg(int32(fd), msg, sys.MSG_NOSIGNAL|sys.MSG_WAITALL, 0)
		m.calls++
		inflight = true
		for ring.CQReady() == 0 {
			if _, err = ring.SubmitAndWait(1); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
		ring.PeekBatch(cqe[:])
		ring.Advance(1)
		inflight = false
		if res := cqe[0].Res; res < 0 {
			err = fmt.Errorf("sendmsg: %w", syscall.Errno(-res))
			break
		} else if int(res) != r.total {
			err = fmt.Errorf("sendmsg: %d of %d bytes", res, r.total)
			break
		}
	}
	m.elapsed = time.Since(t0)
	cpu1, _ := sys.ThreadCPU()
	m.cpu = time.Duration(cpu1 - cpu0)
	m.responses = i
	m.syscalls = ring.Syscalls() - s0
	if w1, werr := io0.syscw(); werr == nil && w1 != w0 && err == nil {
		err = fmt.Errorf("writev: %s: the thread made %d write calls besides io_uring", IOURing, w1-w0)
	}
	if inflight {
		// The ring failed with a request in flight: the kernel may still
		// read the memory, so it stays mapped.
		return m, fmt.Errorf("writev: %s: %w", IOURing, err)
	}
	sys.Munmap(mem)
	if err != nil {
		return m, fmt.Errorf("writev: %s: %w", IOURing, err)
	}
	return m, nil
}
