// Package outfile writes the files iopath makes for its user — archives,
// reports, profiles, generated data — by one rule: the bytes go to a
// temporary file in the target's directory, renamed into place only when
// complete. A failed or interrupted write then never leaves a half file
// where the target was, and never destroys the file that was there. Unless
// replacing is asked for, an existing target is not replaced, not even one
// that appeared while the file was being written: the rename is
// renameat2(RENAME_NOREPLACE). A target that is not a regular file (a
// device, FIFO, socket or directory) is never replaced.
//
// The temporary file is named ".NAME.RANDOM.tmp" beside the target, so
// that it is on the same filesystem (a rename cannot cross one) and is
// found next to the target if the process is killed outright. A caller
// that can be stopped at once (a second Ctrl-C) passes a track function
// that records the temporary file for removal; see Create.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"

	"github.com/iopath/iopath/internal/sys"
)

// ErrExists is the cause when the target exists and replacing it was not
// asked for. errors.Is(err, fs.ErrExist) holds for it too.
var ErrExists error = existsError{}

type existsError struct{}

func (existsError) Error() string        { return "already exists (use --force to overwrite)" }
func (existsError) Is(target error) bool { return target == fs.ErrExist }

// Track records a temporary file for removal should the process be
// stopped before it is renamed or removed; the function it returns
// forgets it again. It may be nil.
type Track func(path string) (forget func())

// Temp is a temporary file being written for a target. Write to it through
// File, then Commit or Abort.
type Temp struct {
	*os.File
	target string
	mode   fs.FileMode // the target's mode, when it exists (kept on replace)
	keep   bool        // keep mode (the target existed)
	forget func()
	done   bool
}

// Create makes an empty temporary file for target in target's directory
// (where a symbolic link target points, so that the link stays and the
// file it names is what is written). Its mode is the existing target's,
// or 0666 less the umask, as os.Create gives. track, when set, is told
// its path.
func Create(target string, track Track) (*Temp, error) {
	dest, err := resolve(target)
	if err != nil {
		return nil, err
	}
	t := &Temp{target: dest}
	if st, err := os.Stat(dest); err == nil {
		if err := replaceable(dest, st); err != nil {
			return nil, err
		}
		t.mode, t.keep = st.Mode().Perm(), true
	}
	dir, base := filepath.Split(dest)
	if len(base) > maxBase {
		// A name near NAME_MAX leaves no room for the prefix and suffix.
		base = base[:maxBase]
	}
	for try := 0; ; try++ {
		name := filepath.Join(dir, fmt.Sprintf(".%s.%08x.tmp", base, rand.Uint32()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			return nil, err
		}
		t.File = f
		break
	}
	t.forget = func() {}
	if track != nil {
		t.forget = track(t.Name())
	}
	return t, nil
}

// replaceable refuses a target that exists and is neither a regular file
// nor a symbolic link: a rename would put the file in place of a device,
// a FIFO or a socket (as root, of /dev/null), which replacing never means.
// A directory is refused too, with a clearer error than rename's.
func replaceable(target string, st fs.FileInfo) error {
	if st.Mode().IsRegular() || st.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	return &fs.PathError{Op: "write", Path: target, Err: fmt.Errorf("%w (%s): not replaced, even with --force", sys.ErrNotRegular, st.Mode().Type())}
}

// maxBase is the most of the target's name a temporary file's name
// carries: with ".", ".RANDOM.tmp" it stays under NAME_MAX (255 bytes).
const maxBase = 200

// resolve returns where target is to be written: target itself, or the
// file a symbolic link target names (resolved through every link).
func resolve(target string) (string, error) {
	st, err := os.Lstat(target)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return target, nil
	}
	dest, err := filepath.EvalSymlinks(target)
	if errors.Is(err, fs.ErrNotExist) {
		// A dangling link: the file it would name is not there to keep;
		// the link itself is what is replaced (or refused).
		return target, nil
	}
	return dest, err
}

// Target is where Commit will put the file.
func (t *Temp) Target() string { return t.target }

// Commit makes the written file the target: it syncs it when sync is set,
// closes it, gives it its mode and renames it into place, over an
// existing target only when replace is set (else the error is ErrExists,
// inside an *fs.PathError naming the target). On any error the temporary
// file is removed and the target is as it was.
func (t *Temp) Commit(replace, sync bool) error {
	if t.done {
		return errors.New("outfile: commit after commit or abort")
	}
	var err error
	if sync {
		err = t.File.Sync()
	}
	if cerr := t.File.Close(); err == nil {
		err = cerr
	}
	if err == nil && t.keep {
		err = os.Chmod(t.Name(), t.mode)
	}
	if err == nil {
		err = Rename(t.Name(), t.target, replace)
	}
	if err != nil {
		os.Remove(t.Name())
	}
	t.done = true
	t.forget()
	return err
}

// Abort closes and removes the temporary file, leaving the target as it
// was. It does nothing after Commit or another Abort.
func (t *Temp) Abort() {
	if t.done {
		return
	}
	t.done = true
	t.File.Close()
	os.Remove(t.Name())
	t.forget()
}

// Write writes target through write, by way of a temporary file (see
// Create and Commit): on success the target holds exactly what write
// wrote; on any error, write's included, it is as it was.
func Write(target string, replace bool, track Track, write func(io.Writer) error) error {
	t, err := Create(target, track)
	if err != nil {
		return err
	}
	if err := write(t.File); err != nil {
		t.Abort()
		return err
	}
	return t.Commit(replace, false)
}

// Rename moves the complete file tmp to target: over it when replace is
// set, else only if target does not exist (ErrExists, inside an
// *fs.PathError naming target, when it does). A filesystem that has no
// RENAME_NOREPLACE gets link(2) and unlink(2), which never replace either.
func Rename(tmp, target string, replace bool) error {
	if replace {
		if st, err := os.Lstat(target); err == nil {
			if err := replaceable(target, st); err != nil {
				return err
			}
		}
		return os.Rename(tmp, target)
	}
	err := sys.RenameNoReplace(tmp, target)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EEXIST):
		return &fs.PathError{Op: "write", Path: target, Err: ErrExists}
	case errors.Is(err, syscall.EINVAL):
		if lerr := os.Link(tmp, target); lerr != nil {
			if errors.Is(lerr, fs.ErrExist) {
				return &fs.PathError{Op: "write", Path: target, Err: ErrExists}
			}
			return lerr
		}
		return os.Remove(tmp)
	}
	return err
}
