package filesrv

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Request bytes.
const (
	reqGet   = 'G'
	reqStats = 'S'
)

// hdrLen is the length prefix of every response.
const hdrLen = 8

// maxBody bounds the length a client accepts in a header, so that a
// garbled header is an error rather than a 2^63-byte wait.
const maxBody = 1 << 40

// Stats are a server's counters since it started, as a control
// connection receives them. Counts and times cover data connections only.
type Stats struct {
	Method    string
	FileSize  int64
	Chunk     int   // ServerConfig.Chunk in force
	Depth     int   // ServerConfig.Depth in force
	Conns     int64 // data connections accepted so far
	Live      int64 // data connections open now
	Responses int64 // complete file responses
	Bytes     int64 // payload bytes of complete responses
	Syscalls  int64 // system calls of the responses (see the package doc)
	// HandlerCPU is the CPU time of the threads serving data connections.
	HandlerCPU time.Duration
	// IOThreadCPU is the CPU time of the process's io_uring kernel
	// threads now alive (iou-wrk, iou-sqp); an exited one's time is lost.
	IOThreadCPU time.Duration
	// ProcessCPU is the whole server process's CPU time (RUSAGE_SELF):
	// the server's alone only when it runs in a process of its own.
	ProcessCPU time.Duration
	FileErrors int64 // responses cut short because the file changed
	ConnErrors int64 // connections that ended with an error (reset, protocol)
	// Retries counts the calls of Syscalls that only repeat or continue
	// a call a signal cut short: an EINTR retried, the rest of a send,
	// sendfile or splice to the socket that moved less than asked, an
	// io_uring_enter whose wait was interrupted. They depend on the
	// scheduling (Go's runtime signals its threads to preempt them), not
	// on the method: Syscalls - Retries is what the responses cost.
	Retries int64
	// AcceptErrors counts accepts that failed for want of descriptors or
	// memory (EMFILE and friends): connections waited in the listen queue.
	AcceptErrors int64
}

const statsFields = 16

const statsLen = statsFields * 8

func (s *Stats) encode(b []byte) {
	m := uint64(len(methods)) // unknown
	for i, n := range methods {
		if n == s.Method {
			m = uint64(i)
		}
	}
	v := [statsFields]uint64{m, uint64(s.FileSize), uint64(s.Chunk), uint64(s.Depth), uint64(s.Live), uint64(s.Conns), uint64(s.Responses), uint64(s.Bytes),
		uint64(s.Syscalls), uint64(s.HandlerCPU), uint64(s.IOThreadCPU), uint64(s.ProcessCPU),
		uint64(s.FileErrors), uint64(s.ConnErrors), uint64(s.Retries), uint64(s.AcceptErrors)}
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
}

func (s *Stats) decode(b []byte) error {
	if len(b) != statsLen {
		return fmt.Errorf("stats record of %d bytes, want %d", len(b), statsLen)
	}
	var v [statsFields]int64
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	if v[0] < 0 || v[0] >= int64(len(methods)) {
		return fmt.Errorf("stats record: unknown method %d", v[0])
	}
	*s = Stats{
		Method: methods[v[0]], FileSize: v[1], Chunk: int(v[2]), Depth: int(v[3]), Live: v[4],
		Conns: v[5], Responses: v[6], Bytes: v[7], Syscalls: v[8], HandlerCPU: time.Duration(v[9]),
		IOThreadCPU: time.Duration(v[10]), ProcessCPU: time.Duration(v[11]), FileErrors: v[12], ConnErrors: v[13],
		Retries: v[14], AcceptErrors: v[15],
	}
	return nil
}

// Sub returns s - o for the counters (Method, FileSize, Chunk, Depth and
// Live are s's). A
// negative io_uring thread figure (a thread exited in between) counts 0.
func (s Stats) Sub(o Stats) Stats {
	d := Stats{
		Method: s.Method, FileSize: s.FileSize, Chunk: s.Chunk, Depth: s.Depth, Live: s.Live,
		Conns: s.Conns - o.Conns, Responses: s.Responses - o.Responses, Bytes: s.Bytes - o.Bytes,
		Syscalls: s.Syscalls - o.Syscalls, HandlerCPU: s.HandlerCPU - o.HandlerCPU,
		IOThreadCPU: max(s.IOThreadCPU-o.IOThreadCPU, 0), ProcessCPU: s.ProcessCPU - o.ProcessCPU,
		FileErrors: s.FileErrors - o.FileErrors, ConnErrors: s.ConnErrors - o.ConnErrors,
		Retries: s.Retries - o.Retries, AcceptErrors: s.AcceptErrors - o.AcceptErrors,
	}
	return d
}
