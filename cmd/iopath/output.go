package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/iopath/iopath/internal/sys"
)

// Every file a command writes for the user (pack -o, --html, --profile's
// files, anything added later) follows one rule: an existing path is
// refused with one line and exit status 2 unless --force is given, and the
// file is written to a temporary file in the same directory, renamed into
// place only when complete. checkOutputFile says so before any work is
// done; writeFileAtomic does the writing (and, without force, renames with
// RENAME_NOREPLACE, so that a file that appeared meanwhile is not lost
// either).

// errOutputExists is the cause when an output path exists and --force was
// not given.
var errOutputExists = errors.New("already exists (use --force to overwrite)")

// checkOutputFile says, before any work is done, why path cannot take an
// output file: it exists and force is not set, it is a directory or a
// special file, its directory is missing, or it is one of the inputs (the
// file being measured, a report being compared), which it would destroy
// even with force. The error is a usage error (exit status 2).
func checkOutputFile(path string, force bool, inputs ...string) error {
	if path == "" {
		return usagef("empty file name")
	}
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return usagef("%s: is a directory (give a file name)", quotePath(path))
		}
		if !st.Mode().IsRegular() {
			return usagef("%s: not a regular file", quotePath(path))
		}
		for _, in := range inputs {
			if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
				return usagef("%s: is the input %s; it would be overwritten", quotePath(path), quotePath(in))
			}
		}
		if !force {
			return usagef("%s: %w", quotePath(path), errOutputExists)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return usagef("%s: directory %s: %w", quotePath(path), quotePath(dir), errors.Unwrap(err))
	}
	if !st.IsDir() {
		return usagef("%s: %s is not a directory", quotePath(path), quotePath(dir))
	}
	return nil
}

// writeFileAtomic writes path through write: into a temporary file beside
// it, renamed over path only when complete, so that a failure or an
// interrupt never leaves a half-written file or destroys an old one.
// Without force an existing path is never replaced, even one that
// appeared after checkOutputFile: the rename fails instead. The temporary
// file is known to the interrupt handler (cleanups) while it exists.
func writeFileAtomic(path string, force bool, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", quotePath(path), err)
	}
	tmp := f.Name()
	forget := cleanups.removeOnExit(tmp)
	defer forget()
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = renameOutput(tmp, path, force)
	}
	if err != nil {
		os.Remove(tmp)
		if errors.Is(err, errOutputExists) {
			return usagef("%s: %w", quotePath(path), errOutputExists)
		}
		return fmt.Errorf("write %s: %w", quotePath(path), err)
	}
	return nil
}

// renameOutput moves the finished tmp to path: over it with force, else
// only if path does not exist (errOutputExists when it does).
func renameOutput(tmp, path string, force bool) error {
	if force {
		return os.Rename(tmp, path)
	}
	err := sys.RenameNoReplace(tmp, path)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EEXIST):
		return errOutputExists
	case errors.Is(err, syscall.EINVAL):
		// A filesystem without renameat2 flags: link(2) fails with EEXIST
		// too, and never replaces.
		if lerr := os.Link(tmp, path); lerr != nil {
			if errors.Is(lerr, fs.ErrExist) {
				return errOutputExists
			}
			return lerr
		}
		return os.Remove(tmp)
	}
	return err
}

// checkOutputDir says, before any work is done, why path cannot take output
// files: it exists and is not a directory, or its parent is missing. A
// missing directory is created by makeOutputDir when the work starts.
func checkOutputDir(path string) error {
	st, err := os.Stat(path)
	if err == nil {
		if !st.IsDir() {
			return usagef("%s: not a directory", quotePath(path))
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(path)
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return usagef("%s: its directory %s does not exist", quotePath(path), quotePath(parent))
	}
	return nil
}

// quotePath returns p as it is when every byte of it prints as itself on
// one line, else Go-quoted ("a\nb", "\x1b[31m"), as ls and %q do, so that
// a name cannot split an error over two lines or send escapes to the
// terminal.
func quotePath(p string) string {
	for _, r := range p {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\uFFFD' {
			return fmt.Sprintf("%q", p)
		}
	}
	return p
}

// cleanupSet holds what must not outlive the process when it is stopped
// at once (a second Ctrl-C): temporary files being written.
type cleanupSet struct {
	mu    sync.Mutex
	files map[string]struct{}
}

// cleanups is the process's cleanup set; main runs it before exiting on a
// second signal.
var cleanups cleanupSet

// removeOnExit registers path for removal if the process is stopped at
// once; the returned function forgets it (call it once path is renamed
// into place or removed).
func (c *cleanupSet) removeOnExit(path string) (forget func()) {
	c.mu.Lock()
	if c.files == nil {
		c.files = map[string]struct{}{}
	}
	c.files[path] = struct{}{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.files, path)
		c.mu.Unlock()
	}
}

// run removes every registered file. It is called by main on the way out.
func (c *cleanupSet) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.files {
		os.Remove(p)
	}
	c.files = nil
}
