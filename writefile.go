package iopath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/uring"
)

// WriteFile writes data to the file named by path and replaces that file
// atomically and durably: whenever the process or the machine stops, path
// names either the old file, whole, or the new one, whole; and once
// WriteFile returns nil the new file survives a crash.
//
// os.WriteFile promises neither. It truncates the file in place and
// writes into it, so that a crash, a SIGKILL or a full disk in the middle
// leaves a truncated, empty or half-old half-new file where the old one
// was; and it never calls fsync, so that even a complete write may be
// lost with the page cache.
//
// WriteFile writes data to a new file in the directory of the file it
// replaces, so that the rename is atomic: an unnamed file (O_TMPFILE),
// or, on a filesystem without those, one named ".NAME.iopath-RANDOM"
// created with O_EXCL. It fsyncs the file (fsync, not fdatasync: the
// inode is new), names an unnamed one ".NAME.iopath-RANDOM" (linkat),
// renames it over path and fsyncs the directory. A process killed before
// the link leaves nothing behind; one killed between the link and the
// rename (two metadata operations: a fraction of a millisecond) leaves
// one ".NAME.iopath-*" file beside path, a whole copy of data, which may
// be removed. On a filesystem without O_TMPFILE that window is the whole
// write, and the file left may be partial.
//
// An existing file keeps its permission bits (0o777; not setuid, setgid
// or sticky, not ACLs or extended attributes); a new file gets WithPerm's,
// 0o644 by default. The umask applies to neither. The new file belongs to
// the caller, unless WithKeepOwner gives it the old file's owner and
// group. It is a new inode: other hard links to the old file keep the old
// contents, and so do descriptors open on it.
//
// A path that is a symbolic link is followed, as os.WriteFile writes
// through it: the file it points to is replaced, in that file's
// directory, and the link stays. A dangling link gets the file it names
// created. A directory is EISDIR, and a FIFO, socket or device
// ErrNotRegular, each in an *fs.PathError, and nothing is written.
//
// An error about the file is an *fs.PathError naming path, with the
// step that failed as Op ("open", "write", "fsync", "rename", ...) and
// its cause: errors.Is(err, syscall.ENOSPC), fs.ErrNotExist (path's
// directory does not exist), fs.ErrPermission work. An error before the
// rename leaves the old file untouched and no temporary file behind; a
// failed fsync of the new file is such an error. Only the fsync of the
// directory comes after the rename: when it fails, WriteFile returns its
// error with the new file in place, but its name may not survive a
// crash. A bad option fails before anything is touched.
//
// WithEngine chooses how the data is written and synced: "write"
// (write(2) until done, then fsync(2)) or "io_uring" (WRITE requests
// linked to an FSYNC, all in one io_uring_enter). WithEngine("io_uring")
// where io_uring cannot run is an error wrapping ErrNotSupported with
// the reason. Auto uses write: io_uring was no faster, for more CPU
// (Plan's Reason and docs/writefile.md say by how much). IOPATH_ENGINE,
// which steers the reads, is not consulted.
//
// WriteFile is safe to call concurrently, also for one path: each call
// replaces the file whole, and the last rename wins.
func WriteFile(path string, data []byte, opts ...Option) error {
	o, err := parseOptions(callWriteFile, opts)
	if err != nil {
		return err
	}
	c, err := writeFileChoice(&o)
	if err != nil {
		return public(err)
	}
	t, err := resolveTarget(path)
	if err != nil {
		return public(err)
	}
	return public(t.replace(data, &o, c.Engine))
}

// writeFilePlan is Plan's answer for ForWriteFile: WriteFile's engine,
// and the errors WriteFile would give before writing (a bad engine, a
// path that is a directory or a FIFO, a directory that does not exist).
func writeFilePlan(path string, o *options) (auto.Choice, error) {
	c, err := writeFileChoice(o)
	if err != nil {
		return auto.Choice{}, err
	}
	t, err := resolveTarget(path)
	if err != nil {
		return auto.Choice{}, err
	}
	dirfd, err := t.openDir()
	if err != nil {
		return auto.Choice{}, err
	}
	sys.Close(dirfd)
	return c, nil
}

// ruleWriteFile is the Choice's Rule when Auto chose WriteFile's engine.
const ruleWriteFile = "write-file"

// writeFileReason is why Auto writes with write(2): BenchmarkWriteFile
// (writefile_test.go; docs/writefile.md has the figures).
const writeFileReason = "write(2) and fsync(2): the two fsyncs (file, directory) take nearly all the time, " +
	"and io_uring's WRITE linked to an FSYNC was no faster at 4 KiB, 64 KiB or 8 MiB, " +
	"for twice the CPU at 4-64 KiB (a ring and an io-wq worker per call; BenchmarkWriteFile, AMD EPYC, ext4 on virtio)"

// writeFileChoice is WriteFile's engine: WithEngine's, which for io_uring
// must be able to run here (else an error wrapping ErrNotSupported, or
// the probe's own error when it ran short of a resource), or Auto's,
// write, whose Reason says why io_uring is unavailable when it is.
func writeFileChoice(o *options) (auto.Choice, error) {
	if o.engine != "" {
		if o.engine == "io_uring" {
			if err := uringWritable(); err != nil {
				return auto.Choice{}, fmt.Errorf("iopath: %s: %w", callWriteFile, err)
			}
		}
		return auto.Choice{Engine: o.engine, Workers: 1, Rule: ruleWithEngine,
			Reason: fmt.Sprintf("WithEngine(%q) in the code", o.engine)}, nil
	}
	c := auto.Choice{Engine: "write", Workers: 1, Rule: ruleWriteFile, Reason: writeFileReason}
	if err := uringWritable(); err != nil {
		c.Reason += "; io_uring is unavailable anyway (" + err.Error() + ")"
	}
	return c, nil
}

// uringWritable returns nil when io_uring can write and sync a file here,
// or why not (see engine.UringError): WriteFile's and Log's one check.
func uringWritable() error { return engine.UringError(features.HaveOps("WRITE", "FSYNC")) }

// writeTarget is where WriteFile puts the new file: the name base in the
// directory dir, which path resolves to through symbolic links, and the
// file there now.
type writeTarget struct {
	path      string // as the caller gave it: every error names it
	dir, base string
	old       *sys.Stat_t // nil when there is no file yet
}

// maxLinks is how many symbolic links resolveTarget follows in a row,
// the kernel's own limit (ELOOP beyond).
const maxLinks = 40

// resolveTarget follows path through symbolic links to the name the new
// file will take, and checks that what is there now, if anything, is a
// regular file. Directories on the way are resolved by the kernel: a
// link's target is joined to its directory as it is, never cleaned, so
// that ".." means what the kernel says.
func resolveTarget(path string) (*writeTarget, error) {
	t := &writeTarget{path: path}
	name := path
	for links := 0; ; links++ {
		switch {
		case name == "":
			return nil, t.err("open", sys.ENOENT)
		case strings.HasSuffix(name, "/"):
			return nil, t.err("open", sys.EISDIR) // as open(2) says with O_CREAT
		}
		var st sys.Stat_t
		err := sys.Lstat(name, &st)
		if err == sys.ENOENT {
			break // a new file (or a missing directory, which openDir reports)
		}
		if err != nil {
			return nil, t.err("stat", err)
		}
		switch st.Mode & sys.S_IFMT {
		case sys.S_IFREG:
			t.old = &st
		case sys.S_IFLNK:
			if links == maxLinks {
				return nil, t.err("open", sys.ELOOP)
			}
			dest, err := os.Readlink(name)
			if err != nil {
				return nil, t.err("readlink", errors.Unwrap(err))
			}
			if !strings.HasPrefix(dest, "/") {
				dest = name[:strings.LastIndexByte(name, '/')+1] + dest
			}
			name = dest
			continue
		case sys.S_IFDIR:
			return nil, t.err("open", sys.EISDIR)
		default:
			return nil, t.err("open", ErrNotRegular)
		}
		break
	}
	i := strings.LastIndexByte(name, '/')
	t.dir, t.base = name[:i+1], name[i+1:]
	if t.dir == "" {
		t.dir = "."
	}
	return t, nil
}

func (t *writeTarget) err(op string, err error) error {
	return &fs.PathError{Op: op, Path: t.path, Err: err}
}

// openDir opens the target's directory, for the names made in it and for
// its fsync.
func (t *writeTarget) openDir() (int, error) {
	fd, err := sys.Openat(sys.AT_FDCWD, t.dir, sys.O_RDONLY|sys.O_DIRECTORY, 0)
	if err != nil {
		return -1, t.err("open", err)
	}
	return fd, nil
}

// replace writes data to a temporary file with engine eng, fsyncs it,
// renames it over the target and fsyncs the directory (see WriteFile).
func (t *writeTarget) replace(data []byte, o *options, eng string) error {
	dirfd, err := t.openDir()
	if err != nil {
		return err
	}
	defer sys.Close(dirfd) // opened read-only: its close loses nothing
	f, err := openTemp(dirfd, t.base)
	if err != nil {
		return t.err("open", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			f.discard()
		}
	}()
	perm := uint32(0o644)
	if o.permSet {
		perm = uint32(o.perm)
	}
	if t.old != nil {
		perm = t.old.Mode & 0o777
		if o.keepOwner {
			if err := sys.Fchown(f.fd, int(t.old.Uid), int(t.old.Gid)); err != nil {
				return t.err("chown", err)
			}
		}
	}
	if err := sys.Fchmod(f.fd, perm); err != nil {
		return t.err("chmod", err)
	}
	write := writeSync
	if eng == "io_uring" {
		write = writeSyncUring
	}
	op, err := write(f.fd, data)
	if err == nil && testHookWritten != nil {
		op, err = testHookWritten()
	}
	if err != nil {
		return t.err(op, err)
	}
	if err := f.link(t.base); err != nil {
		return t.err("link", err)
	}
	err = sys.Close(f.fd)
	f.fd = -1
	if err != nil {
		return t.err("close", err)
	}
	if err := sys.Renameat(dirfd, f.name, t.base); err != nil {
		return t.err("rename", err)
	}
	renamed = true
	if err := sys.Fsync(dirfd); err != nil {
		return t.err("fsync", err)
	}
	return nil
}

// testHookWritten, if set, is called once the engine has written and
// synced the new file, and can fail the step it returns as a failed fsync
// would.
var testHookWritten func() (op string, err error)

// testHookNoTmpfile makes openTemp act as on a filesystem without
// O_TMPFILE, so that tests cover the named temporary file too.
var testHookNoTmpfile bool

// tempFile is the new file until it is renamed over the target.
type tempFile struct {
	fd, dirfd int
	name      string // in dirfd; "" while the file is unnamed (O_TMPFILE)
}

// openTemp makes the new file in the directory dirfd: unnamed if the
// filesystem can (EOPNOTSUPP where it cannot, EISDIR from kernels before
// 3.11, EINVAL from some others; each call tries again, as it is the
// filesystem that answers), else named after base with O_EXCL. The error
// is the bare errno.
func openTemp(dirfd int, base string) (*tempFile, error) {
	if !testHookNoTmpfile {
		fd, err := sys.Openat(dirfd, ".", sys.O_TMPFILE|sys.O_WRONLY, 0o600)
		switch err {
		case nil:
			return &tempFile{fd: fd, dirfd: dirfd}, nil
		case sys.EOPNOTSUPP, sys.EISDIR, sys.EINVAL:
		default:
			return nil, err
		}
	}
	f := &tempFile{dirfd: dirfd}
	err := f.takeName(base, func(name string) (err error) {
		f.fd, err = sys.Openat(dirfd, name, sys.O_WRONLY|sys.O_CREAT|sys.O_EXCL, 0o600)
		return err
	})
	return f, err
}

// link names an unnamed file, just before its rename.
func (f *tempFile) link(base string) error {
	if f.name != "" {
		return nil
	}
	return f.takeName(base, func(name string) error { return sys.LinkTmpfile(f.fd, f.dirfd, name) })
}

// takeName calls create with new temporary names for base until one is
// not taken, and keeps it.
func (f *tempFile) takeName(base string, create func(name string) error) error {
	if len(base) > maxTempBase {
		base = base[:maxTempBase] // room for the rest under NAME_MAX (255)
	}
	for try := 0; ; try++ {
		name := fmt.Sprintf(".%s.iopath-%08x", base, rand.Uint32())
		err := create(name)
		if err == sys.EEXIST && try < 100 {
			continue
		}
		if err == nil {
			f.name = name
		}
		return err
	}
}

// maxTempBase is the most of the target's name a temporary name carries.
const maxTempBase = 200

// discard closes the file and removes its name, if it has one.
func (f *tempFile) discard() {
	if f.fd >= 0 {
		sys.Close(f.fd) // the file is thrown away: nothing to lose
	}
	if f.name != "" {
		sys.Unlinkat(f.dirfd, f.name)
	}
}

// writeSync writes data at the start of the new file fd with write(2),
// looping over short writes, and fsyncs it. It returns the step that
// failed ("write", "fsync") with its error.
func writeSync(fd int, data []byte) (string, error) {
	for len(data) > 0 {
		n, err := sys.Write(fd, data)
		if err != nil {
			return "write", err
		}
		if n == 0 {
			return "write", io.ErrShortWrite
		}
		data = data[n:]
	}
	if err := sys.Fsync(fd); err != nil {
		return "fsync", err
	}
	return "", nil
}

// maxWriteSQE is the most bytes one WRITE request asks for: an SQE's
// length is 32 bits. Tests lower it to chain several with small data.
var maxWriteSQE = 1 << 30

// writeSyncUring is writeSync through a ring of its own: WRITE requests
// of at most maxWriteSQE bytes, each linked (IOSQE_IO_LINK) to the next
// and the last to an FSYNC, submitted and waited for in one
// io_uring_enter. A soft link is what is wanted throughout: a write that
// fails or comes up short cancels what follows it, the FSYNC included,
// and the rest of data is asked again in a new chain (a hard link would
// sync a file known to be incomplete).
func writeSyncUring(fd int, data []byte) (string, error) {
	chain := (len(data)+maxWriteSQE-1)/maxWriteSQE + 1
	entries := uint32(1)
	for int(entries) < chain {
		entries <<= 1
	}
	r, err := uring.New(entries, uring.Options{})
	if err != nil {
		return "write", uringErr(err)
	}
	w := &ringWrite{r: r, res: make([]int32, chain)}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if len(data) > 0 {
		w.pin.Pin(unsafe.SliceData(data)) // the kernel reads it until the completions
	}
	for off := 0; ; {
		n := 0
		for lo := off; lo < len(data); lo += maxWriteSQE {
			sqe := r.GetSQE()
			sqe.PrepWrite(int32(fd), data[lo:min(lo+maxWriteSQE, len(data))], uint64(lo), uint64(n))
			sqe.SetFlags(uring.SQEIOLink)
			n++
		}
		r.GetSQE().PrepFsync(int32(fd), 0, uint64(n))
		if err := w.wait(n + 1); err != nil {
			return "write", err
		}
		short := false
		for _, res := range w.res[:n] {
			want := min(maxWriteSQE, len(data)-off)
			if e := syscall.Errno(-res); e == sys.EINTR || e == sys.EAGAIN {
				short = true // interrupted: asked again, with the rest
				break
			}
			if res <= 0 {
				// The first write that failed; those after it were
				// cancelled.
				w.close()
				if res == 0 {
					return "write", io.ErrShortWrite
				}
				return "write", syscall.Errno(-res)
			}
			off += int(res)
			if int(res) < want {
				short = true // the rest, and the FSYNC, were cancelled
				break
			}
		}
		if short {
			continue
		}
		w.close()
		if res := w.res[n]; res < 0 {
			return "fsync", syscall.Errno(-res)
		}
		return "", nil
	}
}

// ringWrite is writeSyncUring's ring, the results of its requests by
// user_data, and the pin on the data they read.
type ringWrite struct {
	r   *uring.Ring
	res []int32
	pin runtime.Pinner
}

// wait submits the n requests prepared and reaps their completions into
// w.res. An error of io_uring_enter with nothing taken by the kernel
// closes the ring and is said as uringErr says it (a refusal wraps
// ErrNotSupported); with requests in flight, the kernel may still read
// the data: the ring and the pin are kept for good (see leakedWrites).
func (w *ringWrite) wait(n int) error {
	for left := n; left > 0; {
		if _, err := w.r.SubmitAndWait(uint32(left)); err != nil {
			if int(w.r.SQReady()) == left {
				w.close()
				return uringErr(err)
			}
			leakedWritesMu.Lock()
			leakedWrites = append(leakedWrites, w)
			leakedWritesMu.Unlock()
			return fmt.Errorf("io_uring ring failed: %w", err)
		}
		left -= w.r.ForEachCQE(func(c *uring.CQE) { w.res[c.UserData] = c.Res })
	}
	return nil
}

// close closes the ring, every request of which has completed, and
// unpins the data.
func (w *ringWrite) close() {
	w.pin.Unpin()
	w.r.Close()
}

// leakedWrites keeps the rings that failed with writes in flight, and the
// pins on the data those read, for as long as the process lives.
var (
	leakedWritesMu sync.Mutex
	leakedWrites   []*ringWrite
)
