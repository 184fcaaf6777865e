package netio

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/netio/internal/accepts"
)

func init() { register("net", listenNet) }

// netServer is the baseline: a goroutine per connection on Go's netpoller,
// each with one buffer of Config.BufSize. It reads, writes everything it
// read, and reads again, so a connection never holds more than BufSize
// bytes and a peer that stops reading stops the echo (backpressure).
type netServer struct {
	cfg   Config
	ln    *net.TCPListener
	addr  netip.AddrPort
	st    counters
	count connCount
	alog  *accepts.Log

	mu      sync.Mutex
	conns   map[*net.TCPConn]struct{}
	closing bool
	stop    chan struct{} // closed by Shutdown: ends an accept pause

	wg       sync.WaitGroup // the accept loop and every connection
	shutdown onceErr
}

func listenNet(cfg Config, ap netip.AddrPort) (Server, error) {
	var lc net.ListenConfig
	if cfg.SharePort {
		lc.Control = sys.SockControl(sys.SetReusePort)
	}
	l, err := lc.Listen(context.Background(), "tcp", net.TCPAddrFromAddrPort(ap).String())
	if err != nil {
		return nil, err
	}
	ln := l.(*net.TCPListener)
	s := &netServer{
		cfg:   cfg,
		ln:    ln,
		addr:  ln.Addr().(*net.TCPAddr).AddrPort(),
		count: connCount{max: int64(cfg.MaxConns)},
		conns: make(map[*net.TCPConn]struct{}),
		stop:  make(chan struct{}),
	}
	s.alog = newAcceptLog(cfg, "net", s.addr, s.count.open.Load)
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

func (s *netServer) Engine() string       { return "net" }
func (s *netServer) Addr() netip.AddrPort { return s.addr }
func (s *netServer) Stats() Stats {
	st := s.st.snapshot()
	st.Peak = s.count.peak.Load()
	return st
}

func (s *netServer) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// EMFILE and friends (Go's accept has already skipped
			// connections that died in the queue): count, say so, and
			// stop accepting for a moment rather than spin, serving the
			// connections already open. Shutdown ends the pause.
			s.st.acceptErrs.Add(1)
			s.alog.Failed(err)
			pause := time.NewTimer(AcceptPause)
			select {
			case <-pause.C:
			case <-s.stop:
				pause.Stop()
				return
			}
			continue
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.Close()
			return
		}
		if !s.count.reserve() {
			s.mu.Unlock()
			s.st.refused.Add(1)
			c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.st.accepted.Add(1)
		s.st.active.Add(1)
		go s.serve(c)
	}
}

// serve echoes one connection until the peer closes, an error, or
// shutdown.
func (s *netServer) serve(c *net.TCPConn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
		s.count.release()
		s.st.active.Add(-1)
		s.wg.Done()
	}()
	buf := make([]byte, s.cfg.BufSize)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			s.st.bytesIn.Add(int64(n))
			w, werr := c.Write(buf[:n])
			s.st.bytesOut.Add(int64(w))
			if werr != nil {
				if !s.stopping() {
					s.st.resets.Add(1)
				}
				return
			}
		}
		switch {
		case err == nil:
			continue
		case err == io.EOF:
			// The peer half-closed: all it sent is echoed, so send our
			// FIN and wait for it to close its side.
			c.CloseWrite()
			s.discardUntilClosed(c)
			return
		case errors.Is(err, os.ErrDeadlineExceeded) && s.stopping():
			// Shutdown interrupted the read: what was read is echoed.
			c.CloseWrite()
			c.SetReadDeadline(time.Time{})
			s.discardUntilClosed(c)
			return
		default:
			if !s.stopping() {
				s.st.resets.Add(1)
			}
			return
		}
	}
}

// discardUntilClosed reads and drops until the peer closes (or Shutdown's
// deadline closes the connection under us).
func (s *netServer) discardUntilClosed(c *net.TCPConn) {
	var b [512]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			return
		}
	}
}

func (s *netServer) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func (s *netServer) Shutdown(ctx context.Context) error {
	return s.shutdown.do(func() error {
		s.mu.Lock()
		s.closing = true
		close(s.stop)
		s.ln.Close()
		// Wake every reader: each echoes what it has and half-closes.
		for c := range s.conns {
			c.SetReadDeadline(time.Unix(1, 0))
		}
		s.mu.Unlock()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
		}
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	})
}

func (s *netServer) Close() error { return closeNow(s.Shutdown) }
