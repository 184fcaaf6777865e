package netio

import (
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

func (l *uloop) armWake() {
	sqe := l.sqe()
	sqe.PrepRead(int32(l.efd), l.wakeBuf, uring.NoOffset, udata(uopWake, 0, 0))
	l.wakeArmed = true
	l.pending++
}

func (l *uloop) onWake(cqe *uring.CQE) {
	l.wakeArmed = false
	l.pending--
	if cqe.Res == -int32(sys.ECANCELED) || l.wakeCancel {
		return // the loop is exiting
	}
	l.setMode(l.s.mode.Load())
	l.armWake()
}

// setMode acts on a mode from Shutdown: drain stops accepting and starts
// draining every connection; force closes everything.
func (l *uloop) setMode(m int32) {
	if m <= l.mode {
		return
	}
	l.mode = m
	if l.acceptArmed {
		if !l.acceptCancel {
			l.cancelAccept() // its last CQE closes the listener
		}
	} else {
		l.closeListener()
	}
	if l.timerArmed && !l.timerCancel {
		sqe := l.sqe()
		sqe.PrepCancel(udata(uopTimer, 0, 0), 0, udata(uopCancel, 0, 0))
		sqe.Flags |= uring.SQECQESkipSuccess
		l.timerCancel = true
	}
	for i := range l.conns {
		c := &l.conns[i]
		switch {
		case c.state == ucFree || c.state == ucClosing:
		case m == modeForce:
			l.closeConn(int32(i), c, false)
		case c.state == ucOpen:
			c.state = ucDrain
			if c.recv && !c.recvCancel {
				l.cancelRecv(int32(i), c)
			}
			l.advance(int32(i), c)
		}
	}
}

// exitReady reports whether the loop may exit: Shutdown has begun, every
// connection and the listener are closed, and every request has been
// reaped. On the way there it cancels the eventfd READ.
func (l *uloop) exitReady() bool {
	if l.mode == modeRun || l.nconns > 0 || l.lfd >= 0 {
		return false
	}
	if l.wakeArmed && !l.wakeCancel {
		sqe := l.sqe()
		sqe.PrepCancel(udata(uopWake, 0, 0), 0, udata(uopCancel, 0, 0))
		sqe.Flags |= uring.SQECQESkipSuccess
		l.wakeCancel = true
	}
	return l.pending == 0
}
