package filesrv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
	"github.com/iopath/iopath/netio/internal/accepts"
	"github.com/iopath/iopath/netio/netresult"
)

// The four ways of serving a file; see the package doc. Their names and
// order are netresult's, which the reports share.
const (
	ReadWrite = netresult.ReadWrite
	Sendfile  = netresult.Sendfile
	Splice    = netresult.Splice
	IOURing   = netresult.IOURing
)

// methods is the order of Methods, and the index a Stats record carries.
var methods = netresult.FileServeMethods()

// Methods returns the names of the ways to serve a file, in the order
// the reports show them.
func Methods() []string { return slices.Clone(methods) }

// Defaults and bounds of ServerConfig.
const (
	// DefaultChunk is the bytes per pread, per splice into the pipe (the
	// pipe's size) and per io_uring buffer.
	DefaultChunk = 128 << 10
	// DefaultDepth is the io_uring read→send pairs per io_uring_enter.
	DefaultDepth    = 4
	DefaultMaxConns = 1024
	MaxChunk        = 16 << 20
	MaxDepth        = 256
)

// ErrNotSupported is wrapped by Serve's (and Run's) error when a method
// cannot run on this kernel or under this policy (io_uring disabled or
// refused, an opcode missing). A ring that cannot be made for want of
// descriptors or memory is that error, not this one (features.Classify).
// It is features.ErrNotSupported, the one value every package wraps.
var ErrNotSupported = features.ErrNotSupported

// ErrShrank is wrapped (inside an *fs.PathError naming the file) by the
// error of a response the file could not fill because it shrank after
// Serve opened it.
var ErrShrank = errors.New("the file shrank while being served")

// ServerConfig says what Serve serves and how.
type ServerConfig struct {
	Path   string // the file to serve
	Method string // one of Methods
	// Chunk is the bytes moved per pread, per splice into the pipe and
	// per io_uring buffer (0: DefaultChunk). sendfile asks for the whole
	// rest of the file in each call.
	Chunk int
	// Depth is the io_uring read→send pairs linked per io_uring_enter
	// and the registered buffers per connection (0: DefaultDepth).
	Depth int
	// MaxConns bounds the connections served at once (0:
	// DefaultMaxConns); more are closed as soon as they are accepted.
	MaxConns int
	// Log, when set, is told of accepts failing for want of descriptors
	// or memory (Stats.AcceptErrors), at most once a second.
	Log func(msg string)
}

func (c ServerConfig) withDefaults() (ServerConfig, error) {
	if c.Chunk == 0 {
		c.Chunk = DefaultChunk
	}
	if c.Depth == 0 {
		c.Depth = DefaultDepth
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	switch {
	case !slices.Contains(methods, c.Method):
		return c, fmt.Errorf("filesrv: unknown method %q (want one of %s)", c.Method, strings.Join(methods, ", "))
	case c.Path == "":
		return c, errors.New("filesrv: no file to serve")
	case c.Chunk < 4096 || c.Chunk > MaxChunk:
		return c, fmt.Errorf("filesrv: chunk %d: want 4096 to %d bytes", c.Chunk, MaxChunk)
	case c.Depth < 1 || c.Depth > MaxDepth:
		return c, fmt.Errorf("filesrv: depth %d: want 1 to %d", c.Depth, MaxDepth)
	case c.MaxConns < 1:
		return c, fmt.Errorf("filesrv: max conns %d: want at least 1", c.MaxConns)
	}
	return c, nil
}

// server is one Serve call's state.
type server struct {
	cfg  ServerConfig
	fd   int   // the file, opened once
	size int64 // its size when opened: every response's length

	nconns, responses, bytes, syscalls, retries atomic.Int64
	fileErrs, connErrs, acceptErrs              atomic.Int64
	alog                                        *accepts.Log

	mu       sync.Mutex
	live     map[*conn]struct{}
	doneCPU  int64 // ns of finished data connections' threads
	stopping bool
	firstErr error // the first file error
	wg       sync.WaitGroup
}

// conn is one accepted connection. fd, tid, cpu0, control and closed are
// guarded by server.mu (fd is only closed under it, so that Shutdown
// never hits a reused descriptor); pending is the handler's own.
type conn struct {
	fd      int
	tid     int   // the handler's thread; 0 until it starts
	cpu0    int64 // the thread's CPU time when it started serving
	control bool  // it asked for counters: left out of them
	closed  bool
	pending int64 // system calls of the response in progress
	retried int64 // of which repeat a call a signal cut short (Stats.Retries)
}

// Serve serves cfg.Path on ln until ctx ends, then stops accepting,
// shuts every connection down, waits for their handlers and closes ln.
// It is meant to be the main of a child process, so that the process's
// CPU is the server's alone: hand it a listener inherited from the parent
// (net.FileListener) or one it opens itself.
//
// It returns an error at once, closing ln, when the configuration is bad,
// the file cannot be opened (an *fs.PathError naming it) or is not a
// regular file, or the method cannot run here (wrapping ErrNotSupported).
// Once serving, it returns nil when ctx ends, the first file error (a
// response cut short because the file shrank; wrapping ErrShrank) if
// there was one, or the listener's error if ln fails or is closed by
// someone else. Clients that reset or vanish are counted (Stats.ConnErrors)
// but are not Serve's error.
func Serve(ctx context.Context, ln net.Listener, cfg ServerConfig) error {
	s, err := newServer(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	return s.serve(ctx, ln)
}

// closeFile closes the served file.
func (s *server) closeFile() { sys.Close(s.fd) }

// serve is Serve once the server is set up; it closes the file when done.
func (s *server) serve(ctx context.Context, ln net.Listener) error {
	defer s.closeFile()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var acceptErr error
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
					errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) {
					// Out of descriptors or memory: count it, say so,
					// and let connections end before trying again.
					s.acceptErrs.Add(1)
					s.alog.Failed(err)
					time.Sleep(accepts.Pause)
					continue
				}
				acceptErr = fmt.Errorf("filesrv: accept: %w", err)
			}
			break
		}
		fd, err := takeFd(nc)
		if err != nil {
			s.connErrs.Add(1)
			continue
		}
		c := &conn{fd: fd}
		if !s.add(c) {
			sys.Close(fd)
			continue
		}
		s.wg.Add(1)
		go s.handle(c)
	}
	ln.Close()
	s.shutdownAll()
	s.wg.Wait()
	if acceptErr != nil {
		return acceptErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firstErr != nil {
		if n := s.fileErrs.Load(); n > 1 {
			return fmt.Errorf("%w (%d responses in all)", s.firstErr, n)
		}
		return s.firstErr
	}
	return nil
}

// newServer checks cfg, opens the file and, for io_uring, proves that a
// connection's ring and buffers can be set up here.
func newServer(cfg ServerConfig) (*server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK so that a FIFO with no writer is refused below rather
	// than blocking the open forever; it is cleared on the regular file.
	fd, err := sys.Open(cfg.Path, sys.O_RDONLY|sys.O_NONBLOCK)
	if sys.Unopenable(cfg.Path, err) { // a socket
		return nil, &fs.PathError{Op: "serve", Path: cfg.Path, Err: sys.ErrNotRegular}
	}
	if err != nil {
		return nil, err
	}
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		sys.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: cfg.Path, Err: err}
	}
	if st.Mode&sys.S_IFMT != sys.S_IFREG {
		sys.Close(fd)
		return nil, &fs.PathError{Op: "serve", Path: cfg.Path, Err: sys.ErrNotRegular}
	}
	if err := sys.ClearNonblock(fd); err != nil {
		sys.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: cfg.Path, Err: err}
	}
	s := &server{cfg: cfg, fd: fd, size: st.Size, live: map[*conn]struct{}{}}
	s.alog = accepts.NewLog(cfg.Log, fmt.Sprintf("file server (%s)", cfg.Method), func() int64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return int64(len(s.live))
	})
	if cfg.Method == IOURing {
		if err := probeURing(cfg); err != nil {
			sys.Close(fd)
			return nil, err
		}
	}
	return s, nil
}

// probeURing sets up and tears down one connection's ring and buffers,
// so that a kernel or a limit that refuses them fails Serve at once
// instead of every connection later.
func probeURing(cfg ServerConfig) error {
	if err := features.HaveOps("READ_FIXED", "SEND", "RECV"); err != nil {
		return fmt.Errorf("filesrv: %s: %w", IOURing, err)
	}
	// The opcodes are there; what a connection sets up (a ring with
	// registered buffers, within RLIMIT_MEMLOCK and the descriptor limit)
	// is tried once here so that Serve fails at once rather than every
	// connection later.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	u, err := newURingConn(cfg.Chunk, cfg.Depth)
	if err != nil {
		return fmt.Errorf("filesrv: %s: %w", IOURing, features.Classify(err))
	}
	u.close()
	return nil
}

// takeFd takes a connection's socket out of Go's poller: it duplicates the
// descriptor, closes the net.Conn (the socket lives on in the copy) and
// makes the copy blocking, for a thread that makes its own system calls.
func takeFd(nc net.Conn) (int, error) {
	defer nc.Close()
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("filesrv: %T has no file descriptor", nc)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(f uintptr) { fd, derr = sys.DupCloexec(int(f)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := sys.ClearNonblock(fd); err != nil {
		sys.Close(fd)
		return -1, err
	}
	return fd, nil
}

// add registers c, or refuses it when the server stops or is full.
func (s *server) add(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || len(s.live) >= s.cfg.MaxConns {
		return false
	}
	s.live[c] = struct{}{}
	s.nconns.Add(1)
	return true
}

// shutdownAll stops every connection: a handler blocked in recv, send,
// sendfile, splice or io_uring_enter on it wakes up and ends.
func (s *server) shutdownAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	for c := range s.live {
		if !c.closed {
			sys.Shutdown(c.fd, sys.SHUT_RDWR)
		}
	}
}

// testHookThread, when set by a test, is called on a connection's handler
// thread when it starts serving and when it is done (before the socket is
// closed), so that the test can read the thread's own kernel counters.
var testHookThread func(c *conn, end bool)

// handle serves one connection on a goroutine locked to its thread.
func (s *server) handle(c *conn) {
	defer s.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, _ := sys.ThreadCPU()
	s.mu.Lock()
	c.tid, c.cpu0 = sys.Gettid(), cpu0
	s.mu.Unlock()
	if testHookThread != nil {
		testHookThread(c, false)
	}

	var err error
	if s.cfg.Method == IOURing {
		err = s.serveURing(c)
	} else {
		err = s.serveSyscalls(c)
	}
	if testHookThread != nil {
		testHookThread(c, true)
	}

	cpu1, _ := sys.ThreadCPU()
	s.mu.Lock()
	if !c.control {
		s.doneCPU += cpu1 - c.cpu0
	}
	delete(s.live, c)
	c.closed = true
	sys.Close(c.fd)
	stopping := s.stopping
	var pe *fs.PathError
	switch {
	case err == nil:
	case errors.As(err, &pe):
		s.fileErrs.Add(1)
		if s.firstErr == nil {
			s.firstErr = err
		}
	case !stopping:
		s.connErrs.Add(1)
	}
	s.mu.Unlock()
}

// done accounts a complete file response. The response count goes last:
// stats reads it first, so a snapshot that counts a response also holds
// its bytes and calls.
func (s *server) done(c *conn) {
	s.bytes.Add(s.size)
	s.syscalls.Add(c.pending)
	s.retries.Add(c.retried)
	s.responses.Add(1)
	c.pending, c.retried = 0, 0
}

// shrank is the error of a response the file ran out under at off.
func (s *server) shrank(off int64) error {
	return &fs.PathError{Op: "serve", Path: s.cfg.Path,
		Err: fmt.Errorf("%w: it ended at byte %d of the %d it had when opened", ErrShrank, off, s.size)}
}

// readErr is the error of a failed read of the file.
func (s *server) readErr(op string, e error) error {
	return &fs.PathError{Op: op, Path: s.cfg.Path, Err: e}
}

// connErr is the error of a failed socket call.
func connErr(op string, e syscall.Errno) error { return fmt.Errorf("%s: %w", op, e) }

// sendStats answers a control request on c's blocking socket.
func (s *server) sendStats(c *conn) error {
	s.mu.Lock()
	if !c.control {
		c.control = true
		s.nconns.Add(-1)
	}
	s.mu.Unlock()
	c.pending, c.retried = 0, 0
	st := s.stats()
	var b [hdrLen + statsLen]byte
	b[0] = statsLen
	st.encode(b[hdrLen:])
	return sendAll(c.fd, b[:], 0, nil)
}

// stats gathers the counters. The CPU of a live handler thread is read
// from its schedstat (the scheduler's total at its last switch or tick:
// exact for a thread blocked waiting for a request, as data connections
// are while a client asks for counters).
func (s *server) stats() Stats {
	// The live connections first, then the counters: a handler counts
	// its responses before it leaves live, so a snapshot with Live == 0
	// holds every response. Responses before the rest: done adds it last.
	st := Stats{Method: s.cfg.Method, FileSize: s.size, Chunk: s.cfg.Chunk, Depth: s.cfg.Depth}
	s.mu.Lock()
	cpu := s.doneCPU
	for c := range s.live {
		if c.control {
			continue
		}
		st.Live++
		if c.tid == 0 {
			continue
		}
		if t, ok := schedstatCPU(c.tid); ok {
			cpu += max(t-c.cpu0, 0)
		}
	}
	s.mu.Unlock()
	st.Responses = s.responses.Load()
	st.Bytes, st.Syscalls, st.Retries = s.bytes.Load(), s.syscalls.Load(), s.retries.Load()
	st.Conns, st.FileErrors, st.ConnErrors, st.AcceptErrors = s.nconns.Load(), s.fileErrs.Load(), s.connErrs.Load(), s.acceptErrs.Load()
	st.HandlerCPU = time.Duration(cpu)
	if m, err := metrics.IOThreadCPU(); err == nil {
		for _, t := range m {
			st.IOThreadCPU += t
		}
	}
	if p, err := sys.ProcessCPU(); err == nil {
		st.ProcessCPU = time.Duration(p)
	}
	return st
}

// schedstatCPU is the CPU time, in ns, of thread tid of this process.
func schedstatCPU(tid int) (int64, bool) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	return n, err == nil
}

// sendAll sends all of b on the blocking socket fd, counting each call
// in c's response (when c is not nil). A blocking send returns less than
// asked only when a signal cut it short: the call that sends the rest is
// a retry.
func sendAll(fd int, b []byte, flags int, c *conn) error {
	for len(b) > 0 {
		n, e := sys.SendOnce(fd, b, flags)
		if c != nil {
			c.pending++
			if e == syscall.EINTR || (e == 0 && n < len(b)) {
				c.retried++
			}
		}
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return connErr("send", e)
		}
		b = b[n:]
	}
	return nil
}
