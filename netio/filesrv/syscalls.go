package filesrv

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/iopath/iopath/internal/sys"
)

// syscallConn is the per-connection state of the three methods that make
// one system call per step: a user buffer (readwrite) or a pipe (splice).
type syscallConn struct {
	s      *server
	c      *conn
	buf    []byte // readwrite: hdrLen + Chunk bytes
	pr, pw int    // splice: the pipe
	pipeSz int
}

// serveSyscalls answers c's requests with blocking system calls until
// the client closes the connection or a call fails.
func (s *server) serveSyscalls(c *conn) error {
	h := &syscallConn{s: s, c: c, pr: -1, pw: -1}
	switch s.cfg.Method {
	case ReadWrite:
		h.buf = make([]byte, hdrLen+s.cfg.Chunk)
	case Splice:
		r, w, err := sys.Pipe2(0)
		if err != nil {
			return fmt.Errorf("pipe2: %w", err)
		}
		h.pr, h.pw = r, w
		defer sys.Close(r)
		defer sys.Close(w)
		// The pipe holds one chunk: the kernel rounds up to a power of
		// two pages; above pipe-max-size (EPERM without privilege) the
		// default 64 KiB stays.
		if n, err := sys.SetPipeSize(w, s.cfg.Chunk); err == nil {
			h.pipeSz = n
		} else if n, err := sys.PipeSize(w); err == nil {
			h.pipeSz = n
		} else {
			return fmt.Errorf("pipe size: %w", err)
		}
	}
	var req [64]byte
	for {
		n, e := sys.RecvOnce(c.fd, req[:])
		c.pending++
		if e == syscall.EINTR {
			c.retried++
			continue
		}
		if e != 0 {
			return connErr("recv", e)
		}
		if n == 0 {
			return nil
		}
		for _, b := range req[:n] {
			switch b {
			case reqGet:
				if err := h.respond(); err != nil {
					return err
				}
				s.done(c)
			case reqStats:
				if err := s.sendStats(c); err != nil {
					return err
				}
			default:
				return fmt.Errorf("protocol: unknown request %q", b)
			}
		}
	}
}

// respond sends one whole response.
func (h *syscallConn) respond() error {
	switch h.s.cfg.Method {
	case ReadWrite:
		return h.readWrite()
	case Sendfile:
		return h.sendfile()
	default:
		return h.splice()
	}
}

// readWrite preads a chunk at a time into the user buffer and sends it;
// the header rides in front of the first chunk.
func (h *syscallConn) readWrite() error {
	s, c := h.s, h.c
	binary.LittleEndian.PutUint64(h.buf[:hdrLen], uint64(s.size))
	start := 0 // where the bytes to send begin in buf: the header, first
	var off int64
	for first := true; first || off < s.size; first = false {
		n := 0
		if want := int(min(int64(s.cfg.Chunk), s.size-off)); want > 0 {
			for {
				var e syscall.Errno
				n, e = sys.PreadOnce(s.fd, h.buf[hdrLen:hdrLen+want], off)
				c.pending++
				if e == syscall.EINTR {
					c.retried++
					continue
				}
				if e != 0 {
					return s.readErr("pread", e)
				}
				break
			}
			if n == 0 {
				// Send what is before the gap, then give up: the
				// client sees the response cut short at off.
				if err := sendAll(c.fd, h.buf[start:hdrLen], 0, c); err != nil {
					return err
				}
				return s.shrank(off)
			}
		}
		if err := sendAll(c.fd, h.buf[start:hdrLen+n], 0, c); err != nil {
			return err
		}
		off += int64(n)
		start = hdrLen
	}
	return nil
}

// header sends the response header alone, with MSG_MORE when a body
// follows so that TCP puts it in the body's first segment.
func (h *syscallConn) header() error {
	var b [hdrLen]byte
	binary.LittleEndian.PutUint64(b[:], uint64(h.s.size))
	flags := 0
	if h.s.size > 0 {
		flags = sys.MSG_MORE
	}
	return sendAll(h.c.fd, b[:], flags, h.c)
}

// sendfile asks the kernel for the whole rest of the file in each call;
// on a blocking socket one call usually does it all.
func (h *syscallConn) sendfile() error {
	s, c := h.s, h.c
	if err := h.header(); err != nil {
		return err
	}
	var off int64
	for off < s.size {
		want := int(min(s.size-off, sys.MaxRW))
		n, e := sys.Sendfile(c.fd, s.fd, &off, want)
		c.pending++
		if e == syscall.EINTR {
			c.retried++
			continue
		}
		if e != 0 {
			return connErr("sendfile", e)
		}
		if n == 0 {
			return s.shrank(off)
		}
		if n < want && off < s.size {
			// On a blocking socket only a signal cuts a sendfile short
			// (the file's end would be n == 0 next time).
			c.retried++
		}
	}
	return nil
}

// splice moves a pipeful at a time from the file into the pipe, then from
// the pipe to the socket. The pipe is empty between responses.
func (h *syscallConn) splice() error {
	s, c := h.s, h.c
	if err := h.header(); err != nil {
		return err
	}
	var off int64
	for off < s.size {
		var n int
		for {
			var e syscall.Errno
			n, e = sys.Splice(s.fd, &off, h.pw, nil, int(min(int64(h.pipeSz), s.size-off)), sys.SPLICE_F_MOVE|sys.SPLICE_F_MORE)
			c.pending++
			if e == syscall.EINTR {
				c.retried++
				continue
			}
			if e != 0 {
				return s.readErr("splice", e)
			}
			break
		}
		if n == 0 {
			return s.shrank(off)
		}
		flags := sys.SPLICE_F_MOVE
		if off < s.size {
			flags |= sys.SPLICE_F_MORE
		}
		for n > 0 {
			m, e := sys.Splice(h.pr, nil, c.fd, nil, n, flags)
			c.pending++
			if e == syscall.EINTR {
				c.retried++
				continue
			}
			if e != 0 {
				return connErr("splice", e)
			}
			if m < n {
				c.retried++ // cut short by a signal: the rest goes next
			}
			n -= m
		}
	}
	return nil
}
