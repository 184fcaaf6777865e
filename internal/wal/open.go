package wal

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

// Open opens the log at path, creating it (mode o.Perm) when it does
// not exist, takes an exclusive flock on it (one Log per file), checks
// every record, truncates a torn tail (synced), syncs the directory, and
// returns the Log, positioned at the end, with the scan's result. The
// committer is not running yet: call Start.
//
// The directory is synced at every Open, not only when the file is
// created: a process that created the log and died before its own sync
// of the directory leaves a name that a power loss may still take away,
// with every record appended since.
func Open(path string, o Options) (*Log, Result, error) {
	fd, err := openFile(path, o.Perm)
	if err != nil {
		return nil, Result{}, err
	}
	l, r, err := recoverLog(fd, path)
	if err != nil {
		sys.Close(fd)
		return nil, r, err
	}
	l.opts = o
	return l, r, nil
}

// openFile opens path read-write, creating it with perm (exactly: the
// umask does not apply) when it does not exist. A dangling symbolic
// link gets its target created, as os.OpenFile does.
func openFile(path string, perm uint32) (fd int, err error) {
	for attempt := 0; ; attempt++ {
		fd, err = sys.Create(path, sys.O_RDWR, 0)
		if err == nil {
			return fd, nil
		}
		if err != sys.ENOENT || attempt == 3 {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		flags := sys.O_RDWR | sys.O_CREAT | sys.O_EXCL
		if attempt > 0 {
			// Not there, yet "exists": a dangling symbolic link (or a
			// file made and removed meanwhile).
			flags = sys.O_RDWR | sys.O_CREAT
		}
		fd, err = sys.Create(path, flags, perm)
		if err == sys.EEXIST {
			continue // made by someone else meanwhile: open theirs
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		if err := sys.Fchmod(fd, perm); err != nil {
			sys.Close(fd)
			return -1, &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
		return fd, nil
	}
}

// recoverLog locks and checks the log open at fd (see Open).
func recoverLog(fd int, path string) (l *Log, r Result, err error) {
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		return nil, r, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&sys.S_IFMT != sys.S_IFREG {
		return nil, r, &fs.PathError{Op: "open", Path: path, Err: sys.ErrNotRegular}
	}
	id := fileID{st.Dev, st.Ino}
	if err := lock(fd, path, id); err != nil {
		return nil, r, err
	}
	defer func() {
		if err != nil {
			unlock(fd, id)
		}
	}()
	fresh, err := CheckFileHeader(FdReader(fd), path, st.Size)
	if err != nil {
		return nil, r, err
	}
	if fresh {
		if err := initFile(fd, path, st.Size); err != nil {
			return nil, r, err
		}
		r.End, r.Torn = FileHeaderLen, st.Size
		if r.Torn > 0 {
			r.Why = "a file header torn while the log was created"
		}
	} else {
		r, err = Scan(FdReader(fd), path, st.Size, false, nil)
		if err != nil {
			return nil, r, err
		}
		if r.Torn > 0 {
			if err := sys.Ftruncate(fd, r.End); err != nil {
				return nil, r, &fs.PathError{Op: "truncate", Path: path, Err: err}
			}
			if err := sys.Fsync(fd); err != nil {
				return nil, r, &fs.PathError{Op: "fsync", Path: path, Err: err}
			}
		}
	}
	if err := syncDir(path); err != nil {
		return nil, r, err
	}
	l = &Log{path: path, fd: fd, id: id, end: r.End, durable: r.End}
	l.stats.Truncated = r.Torn
	return l, r, nil
}

// fileID names a file: its device and inode.
type fileID struct{ dev, ino uint64 }

// The files this process has open as Logs: a second Open of one fails
// at once, whereas the flock, which another process may hold, is waited
// for (see lock).
var (
	openMu    sync.Mutex
	openFiles = map[fileID]bool{}
)

// LockWait bounds how long Open waits for a log's flock. A process that
// dies with io_uring requests in flight holds its files (and so their
// flocks) until the kernel has finished those requests, after the
// process is gone: a log opened again at once after a crash waits for
// that, which is also what keeps a write of the dead process from
// landing after the new one recovered the file.
var LockWait = 5 * time.Second

// lock takes the exclusive flock of the log open at fd (whose file is
// id), waiting up to LockWait while another holds it.
func lock(fd int, path string, id fileID) error {
	openMu.Lock()
	if openFiles[id] {
		openMu.Unlock()
		return &fs.PathError{Op: "lock", Path: path, Err: fmt.Errorf("the log is open in another Log of this process: %w", sys.EWOULDBLOCK)}
	}
	openFiles[id] = true
	openMu.Unlock()
	deadline := time.Now().Add(LockWait)
	for {
		err := sys.Flock(fd, sys.LOCK_EX|sys.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != sys.EWOULDBLOCK || time.Now().After(deadline) {
			unlock(-1, id)
			if err == sys.EWOULDBLOCK {
				err = fmt.Errorf("the log is open in another process (flock held for %v): %w", LockWait, err)
			}
			return &fs.PathError{Op: "lock", Path: path, Err: err}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// unlock releases the flock of fd (if fd >= 0) and the process's claim
// on id. The flock goes at once, not when the last reference to the
// open file goes (an io_uring ring's file table may hold one a little
// longer).
func unlock(fd int, id fileID) {
	if fd >= 0 {
		sys.Flock(fd, sys.LOCK_UN)
	}
	openMu.Lock()
	delete(openFiles, id)
	openMu.Unlock()
}

// initFile writes the file header of a new log, syncs it, and syncs the
// directory so that the new name lasts too.
func initFile(fd int, path string, size int64) error {
	h := FileHeader()
	if size > 0 {
		if err := sys.Ftruncate(fd, 0); err != nil {
			return &fs.PathError{Op: "truncate", Path: path, Err: err}
		}
	}
	if n, err := sys.Pwrite(fd, h, 0); err != nil || n != len(h) {
		if err == nil {
			err = fmt.Errorf("short write of the file header (%d of %d bytes)", n, len(h))
		}
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	if err := sys.Fdatasync(fd); err != nil {
		return &fs.PathError{Op: "fdatasync", Path: path, Err: err}
	}
	return nil
}

// syncDir fsyncs the directory that holds the file path names (through
// symbolic links: the file's own directory).
func syncDir(path string) error {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	dir := filepath.Dir(path)
	dfd, err := sys.Open(dir, sys.O_RDONLY|sys.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer sys.Close(dfd) // read-only: close cannot lose data
	if err := sys.Fsync(dfd); err != nil {
		return &fs.PathError{Op: "fsync", Path: dir, Err: err}
	}
	return nil
}
