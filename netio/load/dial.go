package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

const (
	// maxDialers is the most dials in flight during the ramp: enough to
	// fill a listen backlog quickly, few enough not to overflow the SYN
	// queue (tcp_max_syn_backlog is 2048 here, somaxconn 4096).
	maxDialers = 256
	// dialTries is how many times a connection is dialled when the
	// server refuses or resets it (a full accept queue, a server still
	// starting), with a backoff doubling from dialBackoff in between. A
	// dial that times out is not tried again: the kernel has already
	// retransmitted its SYN, and the server is not answering.
	dialTries   = 4
	dialBackoff = 10 * time.Millisecond
	// lossyDialTries is dialTries on a lossy network (Config.Lossy),
	// where a timed-out attempt is tried again too: at 30% loss a SYN
	// and its SYN-ACK both get through about half the time, so about 1
	// attempt in 100 runs out of SYN retransmissions; 6 in a row, 1 in
	// 10^12.
	lossyDialTries = 6
	// dialTimeout bounds one attempt: long enough for two SYN
	// retransmissions (1 s, then 2 s more) when the backlog drops SYNs.
	dialTimeout = 5 * time.Second
	// progressEvery is the interval between Progress calls.
	progressEvery = 200 * time.Millisecond
)

// checkNofile makes sure this process may open conns connections (plus
// FdSlack), raising the soft RLIMIT_NOFILE if it must, and says how to
// raise the limit when it cannot.
func checkNofile(conns int) error {
	need := uint64(conns) + FdSlack
	got, rerr := sys.RaiseNofile(need)
	if rerr == nil && got >= need {
		return nil
	}
	soft, hard, err := sys.Nofile()
	if err != nil {
		return fmt.Errorf("load: RLIMIT_NOFILE: %w", err)
	}
	if soft >= need {
		return nil
	}
	msg := fmt.Sprintf("load: %d connections need %d open files, but RLIMIT_NOFILE is %d (hard limit %d): ", conns, need, soft, hard)
	if hard >= need {
		msg += fmt.Sprintf("raise it with `ulimit -n %d` in the shell that starts iopath", need)
	} else {
		msg += fmt.Sprintf("the hard limit must go up too, which needs root: `prlimit --pid $$ --nofile=%d:%d` for this shell, "+
			"or a `* - nofile %d` line in /etc/security/limits.conf (then log in again), then `ulimit -n %d`; or use fewer connections", need, need, need, need)
	}
	if rerr != nil {
		msg += fmt.Sprintf(" (setrlimit: %v)", rerr)
	}
	return errors.New(msg)
}

// dialAll opens cfg.Conns connections to cfg.Addr with at most maxDialers
// in flight, paced at cfg.DialRate when set. With takeFds it returns, for
// the epoll client, bare non-blocking descriptors taken over from the
// connections (takeOver), and no net.Conns. On any failure it closes what
// it opened and returns the error.
//
// retries counts the attempts that failed and were tried again.
func dialAll(ctx context.Context, cfg Config, takeFds bool, retries *atomic.Int64) ([]*net.TCPConn, []int, error) {
	n := cfg.Conns
	var conns []*net.TCPConn
	var fds []int
	if takeFds {
		fds = make([]int, n)
		for i := range fds {
			fds[i] = -1
		}
	} else {
		conns = make([]*net.TCPConn, n)
	}
	var takeMu sync.Mutex
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, dialled atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	// A panic in Progress (the caller's function, called here while the
	// dialers run) goes on once they have stopped and every connection
	// they opened is closed.
	defer func() {
		if p := recover(); p != nil {
			cancel(errors.New("load: Progress panicked"))
			wg.Wait()
			for _, c := range conns {
				if c != nil {
					c.Close()
				}
			}
			closeFds(fds)
			panic(p)
		}
	}()
	for range min(n, maxDialers) {
		wg.Go(func() {
			d := newDialer(cfg, dialTimeout)
			tries := dialTries
			if cfg.Lossy {
				d.Timeout, tries = LossyDialTimeout, lossyDialTries
			}
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if cfg.DialRate > 0 {
					due := start.Add(time.Duration(float64(i) / float64(cfg.DialRate) * float64(time.Second)))
					if !sleepCtx(ctx, time.Until(due)) {
						return
					}
				}
				c, err := dialRetry(ctx, d, cfg.Addr, tries, cfg.Lossy, retries)
				if err != nil {
					if ctx.Err() == nil {
						cancel(fmt.Errorf("load: dial connection %d of %d: %w", i+1, n, err))
					}
					return
				}
				if takeFds {
					fd, err := takeOver(c, &takeMu)
					if err != nil {
						cancel(fmt.Errorf("load: connection %d of %d: take over the socket: %w", i+1, n, err))
						return
					}
					fds[i] = fd
				} else {
					conns[i] = c
				}
				dialled.Add(1)
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
wait:
	for {
		select {
		case <-finished:
			break wait
		case <-tick.C:
			if cfg.Progress != nil {
				cfg.Progress("dial", int(dialled.Load()), n)
			}
		}
	}
	if ctx.Err() != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		closeFds(fds)
		return nil, nil, context.Cause(ctx)
	}
	if cfg.Progress != nil {
		cfg.Progress("dial", n, n)
	}
	return conns, fds, nil
}

// newDialer is the dialer of cfg's connections, each attempt bounded by
// timeout: no keep-alive (it would only add a setsockopt per dial and
// timers to a connection that is never idle), and from cfg.Source when
// set, the port chosen at connect (sys.SetBindNoPort: a run after another
// finds the address's ports held by the last one's TIME_WAIT sockets
// otherwise, and its dials time out).
func newDialer(cfg Config, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: -1}
	if cfg.Source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(cfg.Source)}
		d.Control = sys.SockControl(sys.SetBindNoPort)
	}
	return d
}

// takeOver returns a descriptor of c's socket that Go's runtime knows
// nothing of, non-blocking, and closes c: a dup, after which closing c
// takes the original out of the runtime's poller (epoll_ctl DEL) and
// closes it, leaving the connection to the dup. Under mu, so that the
// dial ramp holds at most one descriptor more than it has connections
// (checkNofile counts one per connection plus FdSlack).
func takeOver(c *net.TCPConn, mu *sync.Mutex) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return -1, err
	}
	mu.Lock()
	defer mu.Unlock()
	fd := -1
	var derr error
	err = rc.Control(func(s uintptr) {
		nfd, err := sys.DupCloexec(int(s))
		if err != nil {
			derr = err
			return
		}
		fd = nfd
	})
	if err != nil {
		derr = err
	}
	c.Close()
	if derr != nil {
		if fd >= 0 {
			sys.Close(fd)
		}
		return -1, fmt.Errorf("dup: %w", derr)
	}
	// Go's sockets are non-blocking already, and the flag is shared
	// with the dup; a loop that blocked in a read would stall every
	// connection it owns, so make sure.
	if err := sys.SetNonblock(fd); err != nil {
		sys.Close(fd)
		return -1, fmt.Errorf("set O_NONBLOCK: %w", err)
	}
	return fd, nil
}

// closeFds closes every descriptor of fds that is open (≥ 0).
func closeFds(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			sys.Close(fd)
		}
	}
}

// dialRetry dials addr, up to tries times, again after a short backoff
// when the error may come from a ramp that outruns the server's accept
// loop; on a lossy network (Config.Lossy) also when the attempt timed out
// (every SYN or SYN-ACK lost), or was reset. retries counts the attempts
// tried again.
func dialRetry(ctx context.Context, d *net.Dialer, addr string, tries int, lossy bool, retries *atomic.Int64) (*net.TCPConn, error) {
	backoff := dialBackoff
	for try := 1; ; try++ {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.(*net.TCPConn), nil
		}
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			return nil, fmt.Errorf("%w: out of local ports: every connection to one address needs its own, "+
				"see net.ipv4.ip_local_port_range (and connections still in TIME_WAIT)", err)
		}
		if try >= tries || ctx.Err() != nil || !(retryable(err) || lossy && timedOut(err)) {
			if try > 1 {
				return nil, fmt.Errorf("%w (after %d tries)", err, try)
			}
			return nil, err
		}
		if !sleepCtx(ctx, backoff) {
			return nil, ctx.Err()
		}
		backoff *= 2
		if retries != nil {
			retries.Add(1)
		}
	}
}

// timedOut says the dial got no answer in time: the kernel's SYN
// retransmissions ran out (ETIMEDOUT) or the Dialer's Timeout did.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.ETIMEDOUT) || errors.As(err, &ne) && ne.Timeout()
}

func retryable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EAGAIN)
}

// sleepCtx sleeps for d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
