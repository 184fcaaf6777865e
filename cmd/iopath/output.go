package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// checkOutputFile says, before any work is done, why path cannot take an
// output file: it is a directory or a special file, its directory is
// missing, or it is one of the inputs (the file being measured, a report
// being compared), which it would destroy.
func checkOutputFile(path string, inputs ...string) error {
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return fmt.Errorf("%s: is a directory (give a file name)", path)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		for _, in := range inputs {
			if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
				return fmt.Errorf("%s: is the input %s; it would be overwritten", path, in)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: directory %s: %w", path, dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	return nil
}

// writeFileAtomic writes path through write: into a temporary file beside
// it, renamed over path only when complete, so that a failure or an
// interrupt never leaves a half-written report or destroys an old one.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// checkOutputDir says, before any work is done, why path cannot take output
// files: it exists and is not a directory, or its parent is missing.
func checkOutputDir(path string) error {
	st, err := os.Stat(path)
	if err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s: not a directory", path)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(path)
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: its directory %s does not exist", path, parent)
	}
	return nil
}
