package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/iopath/iopath/internal/netns"
	"github.com/iopath/iopath/internal/outfile"
	"github.com/iopath/iopath/internal/units"
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
var errOutputExists = outfile.ErrExists

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
	// Find out now, not after a long benchmark, that the file cannot be
	// made there (a directory this user cannot write, /proc): make the
	// temporary file it will be written through, and remove it.
	t, err := outfile.Create(path, nil)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: cannot be written in %s: %w", quotePath(path), quotePath(dir), err)
	}
	t.Abort()
	return nil
}

// writeFileAtomic writes path through write by package outfile's rule:
// into a temporary file beside it, renamed over path only when complete,
// so that a failure or an interrupt never leaves a half-written file or
// destroys an old one. Without force an existing path is never replaced,
// even one that appeared after checkOutputFile: that is a usage error.
// The temporary file is known to the interrupt handler (cleanups) while
// it exists.
func writeFileAtomic(path string, force bool, write func(io.Writer) error) error {
	err := outfile.Write(path, force, cleanups.removeOnExit, write)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, outfile.ErrExists):
		return usagef("%s: %w", quotePath(path), errOutputExists)
	}
	return fmt.Errorf("write %s: %w", quotePath(path), err)
}

// checkJSONFile checks --json FILE as checkOutputFile does, and that it
// is not also the --html file.
func checkJSONFile(cmd, path, html string, force bool, inputs ...string) error {
	if path == "" {
		return nil
	}
	if html != "" && filepath.Clean(html) == filepath.Clean(path) {
		return usagef("%s: --json and --html name the same file %s", cmd, quotePath(path))
	}
	if err := checkOutputFile(path, force, inputs...); err != nil {
		return usagef("%s: --json: %v", cmd, err)
	}
	return nil
}

// writeOutput writes path by writeFileAtomic's rule, when path is set,
// and says so on stderr.
func writeOutput(stderr io.Writer, path string, force bool, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	if err := writeFileAtomic(path, force, write); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "iopath: wrote %s\n", quotePath(path))
	return nil
}

// checkOutputDir says, before any work is done, why path cannot take output
// files: it exists and is not a directory, or its parent is missing. A
// missing directory is created when the work starts ("prof/" as well as
// "prof": the trailing slash names the same directory).
func checkOutputDir(path string) error {
	path = filepath.Clean(path)
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

// quotePath is units.QuotePath, the one rule for printing a file name:
// as it is, or Go-quoted when a character of it would not print as itself
// (a newline, an escape byte), as ls and %q do.
func quotePath(p string) string { return units.QuotePath(p) }

// cleanupSet holds what must not outlive the process when it is stopped
// at once (a second Ctrl-C): temporary files being written, and temporary
// trees (bench --tree's).
type cleanupSet struct {
	mu    sync.Mutex
	files map[string]bool // path -> remove the whole tree under it
	netns map[string]bool // network namespaces (net bench --loss)
	// added, when set (by tests), is called with each path registered,
	// as it is registered: the moment a temporary file exists.
	added func(path string)
}

// cleanups is the process's cleanup set; main runs it before exiting on a
// second signal.
var cleanups cleanupSet

// removeOnExit registers path for removal if the process is stopped at
// once; the returned function forgets it (call it once path is renamed
// into place or removed).
func (c *cleanupSet) removeOnExit(path string) (forget func()) { return c.add(path, false) }

// removeTreeOnExit is removeOnExit for a directory and all under it.
func (c *cleanupSet) removeTreeOnExit(dir string) (forget func()) { return c.add(dir, true) }

func (c *cleanupSet) add(path string, tree bool) (forget func()) {
	c.mu.Lock()
	if c.files == nil {
		c.files = map[string]bool{}
	}
	c.files[path] = tree
	added := c.added
	c.mu.Unlock()
	if added != nil {
		added(path)
	}
	return func() {
		c.mu.Lock()
		delete(c.files, path)
		c.mu.Unlock()
	}
}

// removeNetnsOnExit registers a network namespace for removal if the
// process is stopped at once; the returned function forgets it.
func (c *cleanupSet) removeNetnsOnExit(name string) (forget func()) {
	c.mu.Lock()
	if c.netns == nil {
		c.netns = map[string]bool{}
	}
	c.netns[name] = true
	added := c.added
	c.mu.Unlock()
	if added != nil {
		added(name)
	}
	return func() {
		c.mu.Lock()
		delete(c.netns, name)
		c.mu.Unlock()
	}
}

// run removes every registered file, tree and network namespace. It is
// called by main on the way out.
func (c *cleanupSet) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.netns {
		(&netns.NS{Name: name}).Close()
	}
	c.netns = nil
	for p, tree := range c.files {
		if tree {
			os.RemoveAll(p)
		} else {
			os.Remove(p)
		}
	}
	c.files = nil
}
