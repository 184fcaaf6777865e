// Package accepts is what every iopath server does when accept(2) fails
// for want of descriptors or memory: it stops accepting for Pause rather
// than spin on a listener that stays readable, serves the connections it
// has, and says so, at most once a second, in words that tell the user
// what to raise. The servers count the failures themselves (each in its
// own counters); Log is the rate-limited word. Used by netio's engines and
// netio/filesrv.
package accepts

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// Pause is how long a server stops accepting after an accept failed.
const Pause = 10 * time.Millisecond

// LogEvery is the least time between two lines of a Log.
const LogEvery = time.Second

// Log says, through its log function, that accepts are failing: at once
// for the first failure, then at most once every LogEvery, with the
// failures since the line before. It is safe for concurrent use (a
// server's loops share one); a nil Log, or one without a log function,
// says nothing.
type Log struct {
	log  func(string)
	what string       // "epoll server on 127.0.0.1:7007"
	open func() int64 // connections open now (nil: not said)

	mu    sync.Mutex
	last  time.Time // of the last line
	since int64     // failures since the last line
	total int64
}

// NewLog returns a Log that writes through log (nil: nowhere) lines that
// begin with what, the server, and say how many connections open() finds
// open.
func NewLog(log func(string), what string, open func() int64) *Log {
	return &Log{log: log, what: what, open: open}
}

// Failed notes one failed accept; why is its error, or a sentence where
// the errno alone would mislead (a full io_uring fixed-file table is
// ENFILE).
func (a *Log) Failed(why error) {
	if a == nil || a.log == nil {
		return
	}
	a.mu.Lock()
	a.since++
	a.total++
	now := time.Now()
	if !a.last.IsZero() && now.Sub(a.last) < LogEvery {
		a.mu.Unlock()
		return
	}
	since, total, first := a.since, a.total, a.last.IsZero()
	a.last, a.since = now, 0
	a.mu.Unlock()
	count := fmt.Sprintf("%d failed accepts in the last %v, %d in all", since, LogEvery, total)
	if first {
		count = "the first failed accept"
	}
	served := ""
	if a.open != nil {
		served = fmt.Sprintf(", while the %d open are served", a.open())
	}
	a.log(fmt.Sprintf("%s: accept: %s; new connections wait in the listen queue, unserved%s; retrying every %v (%s)",
		a.what, Describe(why), served, Pause, count))
}

// Describe words an accept failure for a user who must fix it.
func Describe(err error) string {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return err.Error()
	}
	switch e {
	case sys.EMFILE:
		if soft, _, err := sys.Nofile(); err == nil {
			return fmt.Sprintf("too many open files (EMFILE: the process's RLIMIT_NOFILE of %d is reached; raise it with ulimit -n)", soft)
		}
		return "too many open files (EMFILE)"
	case sys.ENFILE:
		return "too many open files in the system (ENFILE: fs.file-max is reached)"
	case sys.ENOBUFS:
		return "out of memory (ENOBUFS)"
	case sys.ENOMEM:
		return "out of memory (ENOMEM)"
	}
	return fmt.Sprintf("%v (errno %d)", e, int(e))
}
