package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
)

// writes reports whether --rw asks for writes.
func (o *benchOptions) writes() bool {
	return o.rw == "write" || o.rw == "randwrite" || o.rw == "append"
}

// setWrite checks --rw, --sync and --write-file against the rest, and
// sets the pattern and the defaults of a write benchmark.
func (o *benchOptions) setWrite(cmd *cobra.Command, args []string) error {
	fl := cmd.Flags()
	switch o.rw {
	case "read", "randread", "write", "randwrite", "append":
	default:
		return usagef("bench: --rw %q: want read, randread, write, randwrite or append", o.rw)
	}
	if fl.Changed("rw") && fl.Changed("pattern") {
		return usagef("bench: give --rw or --pattern, not both (--rw randread is --pattern rand)")
	}
	if fl.Changed("rw") {
		o.pattern = map[string]string{"read": "seq", "randread": "rand", "write": "seq", "randwrite": "rand", "append": "append"}[o.rw]
	}
	if !o.writes() {
		for _, f := range []string{"sync", "write-file"} {
			if fl.Changed(f) {
				return usagef("bench: --%s applies to writes only (--rw write, randwrite or append)", f)
			}
		}
		return nil
	}
	switch {
	case o.tree:
		return usagef("bench: --tree reads a tree of files; it does not write")
	case len(args) > 0:
		return usagef("bench: --rw %s writes only to a file it makes, never to FILE %s: leave it out (a temporary file), or name a new file with --write-file", o.rw, quotePath(args[0]))
	case fl.Changed("consume"):
		return usagef("bench: --consume applies to reads; writes are checked by reading the file back after each run")
	case fl.Changed("min-time"):
		return usagef("bench: --min-time applies to reads; every write run makes one pass over the file")
	case o.writeFile != "" && fl.Changed("dir"):
		return usagef("bench: --dir is for the temporary file; --write-file names the file")
	}
	if !fl.Changed("engines") {
		o.engines = bench.DefaultWriteEngines()
	}
	if !fl.Changed("cache") {
		o.caches = nil // the write defaults: warm, or direct with --sync direct
	}
	o.consume = string(bench.None)
	return nil
}

// spaceMargin is what a write benchmark wants free beyond its file: a
// tenth of it, at least 64 MiB, for the filesystem's own blocks and the
// rest of the machine.
func spaceMargin(size int64) int64 { return max(size/10, 64<<20) }

// writeTarget makes the file a write benchmark writes: a new temporary
// file (the default), or --write-file, which must not exist (with
// --force, an existing regular file is used as it is, and kept). It is
// laid out in full (written with data and fsynced), as fio lays out its
// files, so that runs overwrite allocated blocks. cleanup removes what
// was made; until then the interrupt handler removes it should the
// process be stopped at once.
func (o *benchOptions) writeTarget(ctx context.Context, sizeSet bool, prog *progress, stderr io.Writer) (path string, cleanup func(), err error) {
	cleanup = func() {}
	if o.writeFile != "" {
		st, err := os.Lstat(o.writeFile)
		switch {
		case err == nil && !o.force:
			return "", cleanup, usagef("bench: --write-file %s exists; bench writes only to files it makes: name a new file, or add --force to destroy its content", quotePath(o.writeFile))
		case err == nil && !st.Mode().IsRegular():
			return "", cleanup, &fs.PathError{Op: "bench: --write-file", Path: o.writeFile,
				Err: fmt.Errorf("%w (%s): bench writes regular files only, never a device, directory or mount", engine.ErrNotRegular, st.Mode().Type())}
		case err == nil:
			if sizeSet {
				return "", cleanup, usagef("bench: --size cannot change the size of an existing --write-file (%s)", units.FormatSize(st.Size()))
			}
			if st.Size() == 0 {
				return "", cleanup, &fs.PathError{Op: "bench: --write-file", Path: o.writeFile, Err: errors.New("file is empty: nothing to overwrite (give a new path and --size)")}
			}
			fmt.Fprintf(stderr, "iopath: --force: overwriting %s (%s); it is kept afterwards with the benchmark's data in it\n", quotePath(o.writeFile), units.FormatSize(st.Size()))
			return o.writeFile, cleanup, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", cleanup, err
		}
	}
	dir := o.dir
	if o.writeFile != "" {
		dir = filepath.Dir(o.writeFile)
	} else if dir == "" {
		dir = defaultTempDir()
	}
	size := o.size
	if !sizeSet {
		if size, err = defaultBenchSize(dir); err != nil {
			return "", cleanup, err
		}
	} else if size <= 0 {
		return "", cleanup, usagef("bench: --size must be positive")
	}
	if _, avail, _, err := sys.Statfs(dir); err == nil && uint64(size+spaceMargin(size)) > avail {
		return "", cleanup, &fs.PathError{Op: "bench", Path: dir, Err: fmt.Errorf("%w: a %s write benchmark wants %s free (the file and a margin of %s), and %s has %s",
			sys.ENOSPC, units.FormatSize(size), units.FormatSize(size+spaceMargin(size)), units.FormatSize(spaceMargin(size)), quotePath(dir), units.FormatSize(int64(avail)))}
	}
	forget := func() {}
	opts := gen.Options{Sync: true, Progress: prog.bytes("laying out the file to write"),
		Temp: func(p string) func() { forget = cleanups.removeOnExit(p); return forget }}
	if o.writeFile != "" {
		fmt.Fprintf(stderr, "iopath: laying out %s (%s) to write\n", quotePath(o.writeFile), units.FormatSize(size))
		err = gen.File(ctx, o.writeFile, size, opts)
		path = o.writeFile
		if err == nil {
			// The new file is the interrupt handler's to remove until
			// the benchmark removes it.
			forget = cleanups.removeOnExit(path)
		}
	} else {
		fmt.Fprintf(stderr, "iopath: making a %s temporary file to write in %s\n", units.FormatSize(size), quotePath(dir))
		path, err = gen.TempFile(ctx, dir, size, opts)
	}
	prog.done()
	if err != nil {
		return "", cleanup, err
	}
	return path, func() { os.Remove(path); forget() }, nil
}
