package iopath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/wal"
)

// Log is a write-ahead log file: records appended by many goroutines at
// once, each acknowledged only once it is on stable storage, and read
// back in order after a crash. Open it with OpenLog.
//
// Appends that wait at the same time share one write and one fdatasync
// (group commit): with 64 goroutines appending 4 KiB records it commits
// tens of records per fdatasync, while a lone writer pays what a write
// and an fdatasync per record cost anyway (docs/log.md has the figures).
//
// A Log is safe for concurrent use by any number of goroutines. Only one
// Log (in any process) may have a file open at a time: OpenLog takes an
// exclusive flock(2) on it.
//
// What is promised: once Append returns nil, the record is durable (its
// write and a following fdatasync completed) and survives a crash of the
// process or the machine; after a crash, OpenLog keeps every such record,
// intact and in the order of the commits, and drops at most a torn tail
// of records that were never acknowledged. A failed write or fdatasync
// makes the Log unusable: the Appends of that commit and every later
// call return that error (after a failed fdatasync the kernel may have
// dropped the dirty pages and cleared the error, so nothing written
// since the last good commit can be trusted: open the log again to
// recover). The on-disk format is in docs/log.md.
type Log struct {
	w      *wal.Log
	choice auto.Choice
}

// LogStats counts what a Log did since OpenLog.
type LogStats struct {
	// Records is the number of records made durable, and Bytes their
	// payload bytes (the file grew by Bytes + LogHeaderLen×Records).
	Records, Bytes int64
	// Commits is the number of fdatasync calls (with io_uring: FSYNC
	// requests), one per group commit; Records/Commits is the batching.
	Commits int64
	// Writes is the number of write calls (io_uring: WRITE requests):
	// one per commit unless the kernel wrote short.
	Writes int64
	// Truncated is the bytes of a torn tail OpenLog cut off.
	Truncated int64
}

// MaxLogRecord is the largest record Append takes: 64 MiB.
const MaxLogRecord = wal.MaxRecord

// LogHeaderLen is the bytes each record takes in the file besides its
// payload (its header: length, CRC-32C, offset, commit start).
const LogHeaderLen = wal.HeaderLen

// DefaultBatchBytes is how many bytes of records one group commit writes
// at most unless WithBatchBytes says otherwise.
const DefaultBatchBytes = 1 << 20

// ErrCorrupt is wrapped by the error of OpenLog, ReadLog or Replay for a
// log file damaged where a crash cannot have damaged it: a bad record
// (wrong checksum, header out of place) followed by a good record of a
// later commit, or a file that does not start with a log's header. The
// error is an *fs.PathError naming the file, and its text gives the
// offset of the bad record. Nothing is truncated then: a torn tail (a bad
// record in the last commit, which a crash may have cut short) is not
// corruption, and OpenLog cuts it off.
var ErrCorrupt = wal.ErrCorrupt

// ErrClosed is wrapped (inside an *fs.PathError) by the error of Append
// and Replay on a closed Log. It is fs.ErrClosed, the error of a closed
// os.File or File.
var ErrClosed = fs.ErrClosed

// OpenLog opens the log file at path for appending, creating it when it
// does not exist; an empty file becomes a new log. It takes an exclusive
// flock(2) on the file, reads every record, checking each one's CRC-32C,
// truncates a torn tail (an incomplete or damaged last commit: records
// that were never acknowledged) and syncs the truncation, syncs the
// file's directory (every time: a process that created the log may have
// died before it did), and positions appends at the end.
// LogStats.Truncated says how many bytes were cut.
//
// Errors are *fs.PathError naming path: from open (fs.ErrNotExist for a
// missing directory, fs.ErrPermission), ErrNotRegular for a FIFO,
// socket or device, EISDIR for a directory, ErrCorrupt for damage that
// is not a torn tail (nothing is truncated then), and Op "lock" when a
// Log of this process has the file open, or another process has held
// its lock for 5 s. (OpenLog waits for the lock: a process killed with
// io_uring requests in flight holds the file until the kernel has
// finished them, a moment after it died.)
//
// Options: WithPerm sets the mode of a new file (default 0o600; the
// umask does not apply), WithBatchBytes and WithBatchWait bound a group
// commit, and WithEngine chooses how a commit is written: "pwrite"
// (pwrite(2) of the batch, then fdatasync(2)) or "io_uring" (a WRITE
// linked to an FSYNC, one io_uring_enter per commit, on a ring of its
// own thread). Auto uses pwrite, which measured as fast or faster (see
// Plan's Reason and docs/log.md). WithEngine("io_uring") where io_uring
// cannot run is an error wrapping ErrNotSupported with the reason; under
// Auto (IOPATH_ENGINE=io_uring) the Log falls back to pwrite and
// Choice's Reason says why.
func OpenLog(path string, opts ...Option) (*Log, error) {
	l, err := openLog(path, opts)
	if err != nil {
		return nil, public(err)
	}
	return l, nil
}

func openLog(path string, opts []Option) (*Log, error) {
	o, err := parseOptions(callOpenLog, opts)
	if err != nil {
		return nil, err
	}
	c, err := logPlan(path, &o)
	if err != nil {
		return nil, err
	}
	wo := wal.Options{Perm: 0o600, BatchBytes: DefaultBatchBytes, BatchWait: o.batchWait}
	if o.permSet {
		wo.Perm = uint32(o.perm)
	}
	if o.batchBytes > 0 {
		wo.BatchBytes = o.batchBytes
	}
	w, _, err := wal.Open(path, wo)
	if err != nil {
		return nil, err
	}
	e := wal.Pwrite
	if c.Engine == "io_uring" {
		e = wal.IOURing
	}
	if err := w.Start(e); err != nil {
		if c.Engine == "io_uring" {
			err = engine.UringError(err)
		}
		// Auto falls back only from a refusal; a resource error (EMFILE,
		// ENOMEM) is the caller's to hear.
		if c.Engine != "io_uring" || o.engine != "" || !errors.Is(err, ErrNotSupported) {
			w.Close()
			return nil, fmt.Errorf("iopath: OpenLog %s: %w", path, err)
		}
		c.Engine = "pwrite"
		c.Reason = fmt.Sprintf("io_uring chosen by rule %s could not start (%v): pwrite instead", c.Rule, err)
		if err := w.Start(wal.Pwrite); err != nil {
			w.Close()
			return nil, fmt.Errorf("iopath: OpenLog %s: %w", path, err)
		}
	}
	if n := w.Notes(); len(n) > 0 {
		c.Reason += "; " + strings.Join(n, "; ")
	}
	return &Log{w: w, choice: c}, nil
}

// Append adds record to the log and returns nil once it is durable: its
// write and a following fdatasync have completed. It is safe to call
// from many goroutines at once; Appends that wait at the same time go
// into one commit (one write, one fdatasync), up to WithBatchBytes bytes
// of records. The record is copied: the caller may reuse it as soon as
// Append returns, whatever it returns. An empty record is allowed; one
// larger than MaxLogRecord is an error, and nothing is written.
//
// Records are kept in the order of their commits; Appends that return
// before another starts are in that order.
//
// ctx: when it is done before the record is queued (also while Append
// waits for room in a full batch), Append returns ctx.Err() and the
// record is not written. When it is done after the record was queued,
// Append returns ctx.Err() at once, but the record stays in its commit
// and may still become durable: a caller that must know retries
// nothing blindly, and reads the log. (An Append that found no commit
// running commits its batch itself, on its own goroutine, and returns
// when that commit ends.) A nil ctx is ErrNilContext.
//
// When a commit fails (a write or fdatasync error, a full disk), every
// Append of it returns the error, and so does every later call: the Log
// is unusable (see Log). Append after Close returns an error wrapping
// ErrClosed.
func (l *Log) Append(ctx context.Context, record []byte) error {
	if ctx == nil {
		return ErrNilContext
	}
	return public(l.w.Append(ctx, record))
}

// Close waits for the records already queued to be committed, then
// closes the file. It returns the error that made the Log unusable, if
// a commit failed, or the error of closing the file. Appends that start
// after Close return an error wrapping ErrClosed. Closing again does
// nothing and returns nil.
func (l *Log) Close() error { return public(l.w.Close()) }

// Replay calls fn with every record made durable before Replay started,
// in order, reading them from the file with a descriptor of its own, so
// that Appends may go on meanwhile (their records are not delivered).
// rec is valid only during the call: copy it to keep it. An error from
// fn stops Replay, which returns it as it is. fn must not call Close.
// A damaged record is an error wrapping ErrCorrupt.
func (l *Log) Replay(fn func(rec []byte) error) error {
	if fn == nil {
		return ErrNilFunc
	}
	return public(l.w.Replay(callerFunc(fn)))
}

// Stats returns what the Log did since OpenLog.
func (l *Log) Stats() LogStats {
	s := l.w.Stats()
	return LogStats{Records: s.Records, Bytes: s.Bytes, Commits: s.Commits, Writes: s.Writes, Truncated: s.Truncated}
}

// Choice returns how the Log commits: the engine and why (the rule,
// WithEngine, or the fallback taken when io_uring could not start).
func (l *Log) Choice() Choice { return publicChoice(l.choice) }

// ReadLog calls fn with every record of the log file at path, in order,
// without opening it for appending (no lock, nothing truncated): the
// records OpenLog would keep. A torn tail ends the records without an
// error; damage elsewhere is an error wrapping ErrCorrupt. rec is valid
// only during the call. An error from fn stops ReadLog, which returns it
// as it is. A file being appended to by a Log may be read: ReadLog stops
// at the last complete record it finds.
func ReadLog(path string, fn func(rec []byte) error) error {
	if fn == nil {
		return ErrNilFunc
	}
	return public(readLog(path, callerFunc(fn)))
}

func readLog(path string, fn func(rec []byte) error) error {
	fd, err := sys.Open(path, sys.O_RDONLY|sys.O_NONBLOCK)
	if err != nil {
		return err
	}
	defer sys.Close(fd) // read-only: close cannot lose data
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
	case sys.S_IFDIR:
		return &fs.PathError{Op: "read", Path: path, Err: sys.EISDIR}
	default:
		return &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	fresh, err := wal.CheckFileHeader(wal.FdReader(fd), path, st.Size)
	if err != nil || fresh {
		return err
	}
	_, err = wal.Scan(wal.FdReader(fd), path, st.Size, false, func(_ int64, rec []byte) error { return fn(rec) })
	return err
}

// callerFunc marks fn's errors as the caller's, so that they come back
// as they are.
func callerFunc(fn func(rec []byte) error) func(rec []byte) error {
	return func(rec []byte) error {
		if err := fn(rec); err != nil {
			return callerErr{err}
		}
		return nil
	}
}

// ruleLog is the Choice's Rule when Auto chose a Log's engine.
const ruleLog = "log"

// logReason is why Auto commits with pwrite: BenchmarkLog, side by side.
const logReason = "pwrite(2) and fdatasync(2) per group commit, on the appending goroutine when no commit is running: " +
	"with one writer 0.92-0.98 of os.File's write and fsync per record against io_uring's 0.59-0.85, " +
	"and as fast with 64 writers (BenchmarkLog, docs/log.md)"

// logPlan is Plan's answer for ForLog, and OpenLog's choice: WithEngine,
// or IOPATH_ENGINE when it names a Log engine that can run, or pwrite.
// The log need not exist, but a directory, FIFO, socket or device at
// path, or a missing directory, is OpenLog's error already.
func logPlan(path string, o *options) (auto.Choice, error) {
	if err := logTarget(path); err != nil {
		return auto.Choice{}, err
	}
	if o.engine != "" {
		if o.engine == "io_uring" {
			if err := uringWritable(); err != nil {
				return auto.Choice{}, fmt.Errorf("iopath: %s %s: %w", callOpenLog, path, err)
			}
		}
		return auto.Choice{Engine: o.engine, Workers: 1, Rule: ruleWithEngine,
			Reason: fmt.Sprintf("WithEngine(%q) in the code", o.engine)}, nil
	}
	c := auto.Choice{Engine: "pwrite", Workers: 1, Rule: ruleLog, Reason: logReason}
	uerr := uringWritable()
	switch name := strings.TrimSpace(os.Getenv(auto.EnvEngine)); {
	case name == "" || name == c.Engine:
	case name != "io_uring":
		c.Reason = fmt.Sprintf("%s=%s ignored: not an engine of OpenLog (pwrite, io_uring); %s", auto.EnvEngine, name, c.Reason)
	case uerr != nil:
		c.Reason = fmt.Sprintf("%s=%s ignored: %v; %s", auto.EnvEngine, name, uerr, c.Reason)
		return c, nil
	default:
		return auto.Choice{Engine: name, Workers: 1, Rule: auto.RuleOverride,
			Reason: fmt.Sprintf("%s=%s set by the user (the rules chose %s by rule %s)", auto.EnvEngine, name, c.Engine, c.Rule)}, nil
	}
	if uerr != nil {
		c.Reason += "; io_uring is unavailable anyway (" + uerr.Error() + ")"
	}
	return c, nil
}

// logTarget returns the error OpenLog would give for what is at path
// without creating anything: nil for a regular file, or for no file in
// an existing directory.
func logTarget(path string) error {
	var st sys.Stat_t
	err := sys.Stat(path, &st)
	if errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		if err := sys.Stat(dir, &st); err != nil {
			return &fs.PathError{Op: "open", Path: path, Err: errors.Unwrap(err)}
		}
		if st.Mode&sys.S_IFMT != sys.S_IFDIR {
			return &fs.PathError{Op: "open", Path: path, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if err != nil {
		return err
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
		return nil
	case sys.S_IFDIR:
		return &fs.PathError{Op: "open", Path: path, Err: syscall.EISDIR}
	}
	return &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
}
