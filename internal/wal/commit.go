package wal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// Options says how Open opens a log and how its commits are bounded.
type Options struct {
	// Perm is the mode of a file Open creates.
	Perm uint32
	// BatchBytes bounds the bytes (records with their headers) of one
	// commit; a record that is larger on its own is committed alone.
	BatchBytes int
	// BatchWait is how long a commit may wait for more records once one
	// is queued (0: never).
	BatchWait time.Duration
}

// Stats counts what a Log did since Open.
type Stats struct {
	Records   int64 // records made durable
	Bytes     int64 // their payload bytes (the file grew by Bytes + HeaderLen*Records)
	Commits   int64 // fdatasync calls (io_uring: FSYNC requests)
	Writes    int64 // write calls (io_uring: WRITE requests)
	Truncated int64 // bytes of a torn tail Open cut off
}

// TestHookCommit, if set, is called for every commit instead of the
// engine, with the log's path, its descriptor, the commit's bytes and
// their offset: a test writes what it likes (a prefix, blocks of zeros)
// and returns the error the commit fails with. handled false lets the
// engine commit as usual. Nothing but a test sets it.
var TestHookCommit func(path string, fd int, b []byte, off int64) (handled bool, err error)

// An engine makes one commit durable: it writes b at off (retrying short
// writes) and then calls fdatasync, and returns the write and sync
// calls it made. buf is the index of the registered buffer b lies in,
// or -1. It is called by one goroutine at a time.
type engine interface {
	commit(b []byte, buf int, off int64) (writes, syncs int, err error)
	// broken says that a failed commit may have left a request in the
	// kernel's hands, which may still read its buffer: the buffers
	// must then never be reused or unmapped.
	broken() bool
	// close releases the engine (on the goroutine that made it).
	close()
}

// Engine names what a Log commits with.
type Engine struct {
	// Name is "pwrite" or "io_uring".
	Name string
	// Pinned says that the engine must run on the committer's own
	// goroutine, locked to its thread (an io_uring ring made with
	// SINGLE_ISSUER): Appends never commit themselves.
	Pinned bool
	// New makes the engine on the goroutine that will drive it, for fd
	// and the committer's two buffers; it returns notes to report (a
	// step down taken) or an error.
	New func(fd int, path string, bufs [][]byte) (engine, []string, error)
}

// Pwrite is the pwrite(2) + fdatasync(2) engine.
var Pwrite = Engine{Name: "pwrite", New: newPwrite}

// IOURing is the io_uring engine: WRITE(_FIXED) linked to an FSYNC.
var IOURing = Engine{Name: "io_uring", Pinned: true, New: newUring}

// Log is an open log file. Open recovers it; Start starts its committer.
type Log struct {
	path string
	fd   int
	id   fileID
	opts Options

	mu      sync.Mutex
	cur     *buffer // gathering the next commit
	spare   *buffer // the other buffer: in flight during a commit
	next    *commit // the commit cur's records will go in
	end     int64   // where cur will be written
	durable int64   // the end of the last durable commit
	// busy says that one actor (an Append committing itself, or the
	// committer goroutine) owns the commit of cur: while it is set, cur
	// is committed without anyone else's help. cur is never left with
	// records and busy unset.
	busy   bool
	failed error // the first failed commit's error: the Log is unusable
	closed bool
	space  chan struct{} // closed when cur is taken (for Appends that found it full)
	gather chan struct{} // closed when a commit waiting for more (BatchWait) should go
	idle   chan struct{} // closed when busy is cleared (for Close)
	stats  Stats
	// lastRecords is the number of records of the last commit.
	lastRecords int64

	engine  Engine
	eng     engine // made by the committer goroutine
	notes   []string
	kick    chan struct{} // hands the commit to the committer goroutine
	stop    chan struct{}
	exited  chan struct{}
	started bool
	broken  bool // a request may still be in the kernel's hands: keep the buffers
	bufs    [2]buffer
}

// buffer is one of a Log's two batch buffers: off-heap memory that a
// commit writes from while the other gathers the next commit.
type buffer struct {
	std     []byte // BatchBytes rounded up to pages; registered buffer idx with io_uring
	big     []byte // for a record larger than std, committed alone; nil otherwise
	idx     int
	n       int
	records int64
	payload int64
}

func (b *buffer) bytes() ([]byte, int) {
	if b.big != nil {
		return b.big[:b.n], -1
	}
	return b.std[:b.n], b.idx
}

// reset empties b after its commit, unmapping a big buffer unless the
// kernel may still read it.
func (b *buffer) reset(keep bool) {
	if b.big != nil && !keep {
		sys.Munmap(b.big)
	}
	b.big, b.n, b.records, b.payload = nil, 0, 0, 0
}

// commit is the fate of one group commit, shared by its Appends.
type commit struct {
	done chan struct{} // closed when err is set
	err  error
}

func newCommit() *commit { return &commit{done: make(chan struct{})} }

// Start allocates the two batch buffers and starts the committer
// goroutine with engine e, made on that goroutine (locked to its thread
// when e is Pinned). When e cannot start, the Log is as before (Start
// may be called again with another engine, or Close) and the error is
// e's, unclassified: the caller decides whether it is a refusal.
func (l *Log) Start(e Engine) error {
	if l.started {
		return errors.New("wal: Start called twice")
	}
	if l.bufs[0].std == nil {
		size := (l.opts.BatchBytes + sys.PageSize() - 1) &^ (sys.PageSize() - 1)
		for i := range l.bufs {
			b, err := sys.MmapAnon(size)
			if err != nil {
				l.freeBuffers()
				return fmt.Errorf("log %s: %d bytes for a batch buffer: %w", l.path, size, err)
			}
			l.bufs[i] = buffer{std: b, idx: i}
		}
	}
	l.cur, l.spare, l.next = &l.bufs[0], &l.bufs[1], newCommit()
	l.kick, l.stop, l.exited = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	ready := make(chan error, 1)
	go l.committer(e, ready)
	if err := <-ready; err != nil {
		<-l.exited
		return err
	}
	l.mu.Lock()
	l.engine, l.started = e, true
	l.mu.Unlock()
	return nil
}

func (l *Log) freeBuffers() {
	for i := range l.bufs {
		if l.bufs[i].std != nil {
			sys.Munmap(l.bufs[i].std)
			l.bufs[i].std = nil
		}
	}
}

// committer makes the engine and then runs the commits handed to it
// until Close stops it.
func (l *Log) committer(e Engine, ready chan<- error) {
	defer close(l.exited)
	if e.Pinned {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	eng, notes, err := e.New(l.fd, l.path, [][]byte{l.bufs[0].std, l.bufs[1].std})
	if err != nil {
		ready <- err
		return
	}
	l.mu.Lock()
	l.eng, l.notes = eng, notes
	l.mu.Unlock()
	ready <- nil
	for {
		select {
		case <-l.kick:
		case <-l.stop:
			eng.close()
			return
		}
		l.mu.Lock()
		for l.cur.n > 0 && l.failed == nil {
			l.commitLocked()
		}
		l.setIdleLocked()
		l.mu.Unlock()
	}
}

// Notes are what the engine reported when it started (steps down).
func (l *Log) Notes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.notes
}

// closedErr is the error of a call on a closed Log.
func (l *Log) closedErr(op string) error {
	return &fs.PathError{Op: op, Path: l.path, Err: fs.ErrClosed}
}

// Append adds rec to the next commit and returns once that commit is
// durable (nil), failed (its error, also for every later call), or ctx
// is done (ctx.Err(); the record may still become durable). An Append
// that finds no commit running commits itself, on its own goroutine
// (engines that allow it), so that a lone writer hands nothing to
// another goroutine; records that arrive meanwhile are committed by the
// committer goroutine.
func (l *Log) Append(ctx context.Context, rec []byte) error {
	if len(rec) > MaxRecord {
		return &fs.PathError{Op: "append", Path: l.path,
			Err: fmt.Errorf("record of %d bytes: larger than the limit of %d bytes", len(rec), MaxRecord)}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	crc := PayloadCRC(rec)
	frame := HeaderLen + len(rec)
	l.mu.Lock()
	for {
		if l.failed != nil {
			err := l.failed
			l.mu.Unlock()
			return err
		}
		if l.closed || !l.started {
			l.mu.Unlock()
			return l.closedErr("append")
		}
		if l.cur.n == 0 || l.cur.n+frame <= l.opts.BatchBytes {
			break
		}
		// No room: wait until cur is taken, and let a commit that waits
		// for more go at once.
		if l.space == nil {
			l.space = make(chan struct{})
		}
		space := l.space
		l.wakeGatherLocked()
		l.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.mu.Lock()
	}
	if err := l.addLocked(rec, crc, frame); err != nil {
		l.mu.Unlock()
		return err
	}
	c := l.next
	if l.cur.n >= l.opts.BatchBytes {
		l.wakeGatherLocked()
	}
	if l.busy {
		l.mu.Unlock()
		return wait(ctx, c)
	}
	l.busy = true
	if l.engine.Pinned {
		l.kickLocked()
		l.mu.Unlock()
		return wait(ctx, c)
	}
	// Lead: commit cur here. What arrives meanwhile goes to the
	// committer goroutine, so that this Append returns after one commit.
	l.commitLocked()
	if l.cur.n > 0 && l.failed == nil {
		l.kickLocked()
	} else {
		l.setIdleLocked()
	}
	l.mu.Unlock()
	return c.err
}

// wait waits for c, or for ctx.
func wait(ctx context.Context, c *commit) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		select {
		case <-c.done:
			return c.err
		default:
			return ctx.Err()
		}
	}
}

// addLocked frames rec into cur.
func (l *Log) addLocked(rec []byte, crc uint32, frame int) error {
	b := l.cur
	dst := b.std
	if b.n == 0 && frame > len(b.std) {
		big, err := sys.MmapAnon((frame + sys.PageSize() - 1) &^ (sys.PageSize() - 1))
		if err != nil {
			return &fs.PathError{Op: "append", Path: l.path, Err: fmt.Errorf("a buffer for a record of %d bytes: %w", len(rec), err)}
		}
		b.big, dst = big, big
	}
	off := l.end + int64(b.n)
	PutHeader(dst[b.n:], crc, len(rec), off, b.n)
	copy(dst[b.n+HeaderLen:], rec)
	b.n += frame
	b.records++
	b.payload += int64(len(rec))
	return nil
}

func (l *Log) kickLocked() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *Log) wakeGatherLocked() {
	if l.gather != nil {
		close(l.gather)
		l.gather = nil
	}
}

func (l *Log) setIdleLocked() {
	l.busy = false
	if l.idle != nil {
		close(l.idle)
		l.idle = nil
	}
}

// gatherLocked waits up to BatchWait for cur to fill, unless the Log
// is closing.
func (l *Log) gatherLocked() {
	deadline := time.Now().Add(l.opts.BatchWait)
	for l.cur.n < l.opts.BatchBytes && !l.closed && l.failed == nil {
		d := time.Until(deadline)
		if d <= 0 {
			return
		}
		g := make(chan struct{})
		l.gather = g
		l.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-g:
		case <-t.C:
		}
		t.Stop()
		l.mu.Lock()
		if l.gather == g {
			l.gather = nil
		}
	}
}

// commitLocked commits cur (which has records): it swaps the buffers,
// so that Appends gather into the other one, writes and syncs without
// the lock, and publishes the result. The caller holds busy.
func (l *Log) commitLocked() {
	if l.opts.BatchWait > 0 {
		l.gatherLocked()
		if l.failed != nil || l.cur.n == 0 {
			return
		}
	} else if l.lastRecords > 1 {
		// The last commit woke several writers, about to append again:
		// let those ready to run add their records first. With 64
		// writers that made commits of 47 records instead of 32
		// (BenchmarkLog): without it, the first writer back commits
		// alone while the rest queue behind it. Not after a commit of
		// one record (a lone writer): Gosched wakes an idle thread to
		// look for work, a futex call that cost a lone writer 5 µs a
		// record.
		l.mu.Unlock()
		runtime.Gosched()
		l.mu.Lock()
	}
	b, c, off := l.cur, l.next, l.end
	l.cur, l.spare, l.next = l.spare, b, newCommit()
	l.end += int64(b.n)
	if l.space != nil {
		close(l.space)
		l.space = nil
	}
	eng := l.eng
	l.mu.Unlock()

	data, idx := b.bytes()
	var writes, syncs int
	var err error
	handled := false
	if TestHookCommit != nil {
		handled, err = TestHookCommit(l.path, l.fd, data, off)
		if handled {
			writes, syncs = 1, 1
		}
	}
	if !handled {
		writes, syncs, err = eng.commit(data, idx, off)
	}

	l.mu.Lock()
	l.stats.Writes += int64(writes)
	l.stats.Commits += int64(syncs)
	if err != nil {
		c.err = err
		close(c.done)
		l.failLocked(err)
		b.reset(l.broken)
		return
	}
	l.durable = off + int64(b.n)
	l.lastRecords = b.records
	l.stats.Records += b.records
	l.stats.Bytes += b.payload
	b.reset(false)
	close(c.done)
}

// failLocked makes the Log unusable after err: the records gathered in
// cur will never be written, and every later call returns err. After a
// failed write or fdatasync the state of the page cache is unknown (the
// kernel may have dropped the dirty pages and cleared the error), so no
// commit is tried again.
func (l *Log) failLocked(err error) {
	if l.failed == nil {
		l.failed = err
	}
	l.next.err = err
	close(l.next.done)
	l.next = newCommit()
	l.cur.reset(false)
	if l.space != nil {
		close(l.space)
		l.space = nil
	}
	if l.eng != nil && l.eng.broken() {
		l.broken = true
	}
}

// Close waits for the records queued to be committed, stops the
// committer and closes the file. It returns the error that made the Log
// unusable, if any, or the error of closing the file. Calling it again
// does nothing and returns nil.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.wakeGatherLocked()
	for l.busy {
		idle := make(chan struct{})
		l.idle = idle
		l.mu.Unlock()
		<-idle
		l.mu.Lock()
	}
	failed := l.failed
	l.mu.Unlock()
	if l.started {
		close(l.stop)
		<-l.exited
	}
	lockFd := -1 // broken: the flock stays until the kernel is done with the file
	if !l.broken {
		l.freeBuffers()
		lockFd = l.fd
	}
	unlock(lockFd, l.id)
	err := sys.Close(l.fd)
	if failed != nil {
		return failed
	}
	if err != nil {
		return &fs.PathError{Op: "close", Path: l.path, Err: err}
	}
	return nil
}

// Replay calls fn with every durable record, in order, read with a
// descriptor of its own (a duplicate of the Log's): the records durable
// when it starts. rec is valid only during the call. fn's error stops
// it and is returned as it is.
func (l *Log) Replay(fn func(rec []byte) error) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.closedErr("replay")
	}
	end := l.durable
	fd, err := sys.DupCloexec(l.fd)
	l.mu.Unlock()
	if err != nil {
		return &fs.PathError{Op: "dup", Path: l.path, Err: err}
	}
	defer sys.Close(fd) // read-only use: close cannot lose data
	_, err = Scan(FdReader(fd), l.path, end, true, func(_ int64, rec []byte) error { return fn(rec) })
	return err
}

// Stats returns what the Log did since Open.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Queued is the number of records waiting for the next commit.
func (l *Log) Queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return 0
	}
	return int(l.cur.records)
}

// Closing reports whether Close has been called.
func (l *Log) Closing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Path is the log's path as given to Open.
func (l *Log) Path() string { return l.path }
