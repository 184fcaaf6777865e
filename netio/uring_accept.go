package netio

import (
	"fmt"
	"syscall"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

func (l *uloop) onAccept(cqe *uring.CQE) {
	more := cqe.More()
	if !more {
		l.acceptArmed, l.acceptCancel = false, false
		l.pending--
	}
	res := cqe.Res
	if res >= 0 && l.fixed {
		l.slotsUsed++
	}
	backoff := false
	switch {
	case res >= 0 && l.mode != modeRun:
		l.closeFd(res) // accepted as Shutdown began
	case res >= 0 && !l.s.count.reserve():
		// Count before the close, so that a client that sees the close
		// also sees the count.
		l.st.refused.Add(1)
		l.closeFd(res)
	case res >= 0:
		l.newConn(res)
	case res == -int32(sys.EMFILE) || res == -int32(sys.ENFILE) || res == -int32(sys.ENOBUFS) || res == -int32(sys.ENOMEM):
		// Out of descriptors (or of fixed-file slots: ENFILE) or
		// memory: count it, say so, and stop accepting for a moment
		// rather than fail again at once. Open connections are served
		// meanwhile, and may free some.
		l.st.acceptErrs.Add(1)
		backoff = true
		why := error(syscall.Errno(-res))
		if l.fixed && res == -int32(sys.ENFILE) && l.slotsUsed >= l.p.fileSlots {
			// The file table is full: the kernel took the connection
			// from the queue, found no slot and closed it.
			l.st.refused.Add(1)
			why = fmt.Errorf("the fixed-file table is full (ENFILE: %d slots, MaxConns+64 or RLIMIT_NOFILE, whichever is lower): the kernel closed the connection", l.p.fileSlots)
		}
		l.s.alog.Failed(why)
		if more && !l.acceptCancel {
			l.cancelAccept()
		}
	}
	if more || l.acceptArmed {
		return
	}
	switch {
	case l.mode != modeRun:
		l.closeListener()
	case backoff:
		if !l.timerArmed {
			sqe := l.sqe()
			sqe.PrepTimeout(l.ts, 0, 0, udata(uopTimer, 0, 0))
			l.timerArmed = true
			l.pending++
		}
	case !l.timerArmed:
		// ECANCELED, ECONNABORTED, a full CQ: accept again.
		l.armAccept()
	}
}

func (l *uloop) armAccept() {
	sqe := l.sqe()
	if l.fixed {
		// A direct descriptor cannot be close-on-exec: it is in no fd
		// table.
		sqe.PrepAcceptDirect(int32(l.lfd), sys.SOCK_NONBLOCK, true, udata(uopAccept, 0, 0))
	} else {
		sqe.PrepAccept(int32(l.lfd), sys.SOCK_NONBLOCK|sys.SOCK_CLOEXEC, true, udata(uopAccept, 0, 0))
	}
	l.acceptArmed = true
	l.pending++
}

func (l *uloop) cancelAccept() {
	sqe := l.sqe()
	sqe.PrepCancel(udata(uopAccept, 0, 0), 0, udata(uopCancel, 0, 0))
	sqe.Flags |= uring.SQECQESkipSuccess
	l.acceptCancel = true
}

func (l *uloop) closeListener() {
	if l.lfd >= 0 {
		sys.Close(l.lfd)
		l.lfd = -1
	}
}

func (l *uloop) newConn(fd int32) {
	var i int32
	if n := len(l.free); n > 0 {
		i = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		i = int32(len(l.conns))
		l.conns = append(l.conns, uconn{head: -1, tail: -1, iov: -1})
	}
	c := &l.conns[i]
	c.fd = fd
	c.state = ucOpen
	l.nconns++
	l.st.accepted.Add(1)
	l.st.active.Add(1)
	l.armRecv(i, c)
}
