package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/internal/units"
)

// packOptions are the flags of "iopath pack".
type packOptions struct {
	output string
	zstd   bool
	level  string
	force  bool
}

func init() { subcommands = append(subcommands, newPackCmd) }

func newPackCmd(stdout, stderr io.Writer) *cobra.Command {
	o := packOptions{level: "default"}
	cmd := &cobra.Command{
		Use:   "pack DIR -o FILE [--zstd] [--level fastest|default|better]",
		Short: "Pack a directory's files into one tar or tar.zst for the archive batch engine",
		Long: `pack writes the regular files under DIR, in lexical order and named
relative to DIR, into one tar archive FILE — zstd-compressed when FILE ends
in .tar.zst, .tzst or .zst, or with --zstd. The batch engine "archive"
reads them back: one open and large sequential reads instead of an open,
a read and a close per file.

Symlinks are not followed: they, devices, FIFOs and sockets are skipped
and counted in the summary. Directories get no entries of their own.
FILE must not be inside DIR. It is written to a temporary file beside it
and renamed into place when complete: an error (an unreadable file, a full
disk) or an interrupt leaves no partial FILE and does not harm an old one.
A progress bar is drawn on stderr when it is a terminal; a one-line
summary is printed at the end.`,
		Example: "  iopath pack /data/small -o /var/tmp/small.tar.zst",
		Args:    argsUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPack(cmd.Context(), o, cmd.Flags().Changed("level"), args[0], stderr)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "archive to write (.tar, or .tar.zst/.tzst for zstd)")
	f.BoolVar(&o.zstd, "zstd", false, "compress with zstd whatever FILE's name (not with a .tar name)")
	f.StringVar(&o.level, "level", o.level, "zstd level: fastest, default or better")
	f.BoolVar(&o.force, "force", false, "overwrite FILE if it exists")
	return cmd
}

func runPack(ctx context.Context, o packOptions, levelSet bool, dir string, stderr io.Writer) error {
	out := o.output
	switch {
	case dir == "":
		return usagef("pack: empty directory name")
	case out == "":
		return usagef("pack: no archive given: -o FILE (.tar or .tar.zst)")
	}
	useZstd, err := packFormat(out, o.zstd)
	if err != nil {
		return err
	}
	level, err := batch.ParseLevel(o.level)
	if err != nil {
		return usagef("pack: --%v", err)
	}
	if levelSet && !useZstd {
		return usagef("pack: --level is for zstd: name the archive .tar.zst or give --zstd")
	}
	dirInfo, err := os.Stat(dir)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			err = pe.Err
		}
		return fmt.Errorf("pack: %s: %w", quotePath(dir), err)
	}
	if !dirInfo.IsDir() {
		return fmt.Errorf("pack: %s: not a directory (pack takes a directory)", quotePath(dir))
	}
	if err := checkOutputFile(out, o.force); err != nil {
		return usagef("pack: -o: %v", err)
	}
	if inside, err := pathInside(out, dirInfo); err != nil {
		return usagef("pack: -o: %v", err)
	} else if inside {
		return usagef("pack: -o %s: is inside %s; it would pack itself (write it elsewhere)", quotePath(out), quotePath(dir))
	}

	prog := newProgress(stderr)
	defer prog.done()
	opts := batch.PackOptions{Zstd: useZstd, Level: level}
	if prog.tty {
		if total, ok := countFiles(ctx, dir); ok {
			opts.Progress = prog.files(total, "pack "+quotePath(filepath.Base(filepath.Clean(dir))))
		}
	}
	start := time.Now()
	var st batch.PackStats
	var packErr error
	err = writeFileAtomic(out, o.force, func(w io.Writer) error {
		st, packErr = batch.Pack(ctx, dir, renameErrs{w, out}, opts)
		return packErr
	})
	switch {
	case ctx.Err() != nil && (packErr != nil || err != nil):
		return fmt.Errorf("pack: interrupted; %s not written", quotePath(out))
	case packErr != nil:
		return fmt.Errorf("pack: %w (%s not written)", packErr, quotePath(out))
	case err != nil:
		return err
	}
	elapsed := time.Since(start)
	prog.done()
	kind := "tar"
	if useZstd {
		kind = "tar.zst"
	}
	line := fmt.Sprintf("packed %s (%s) into %s (%s, %s) in %s", countNoun(st.Files, "file"),
		units.RoughSize(st.Bytes), quotePath(out), kind, units.RoughSize(st.Written), formatElapsed(elapsed))
	if s := st.Skipped(); s != "" {
		line += "; skipped " + s
	}
	fmt.Fprintln(stderr, line)
	return nil
}

// packFormat says whether the archive named out is zstd-compressed: by its
// name, or by --zstd for a name that says neither.
func packFormat(out string, zstdFlag bool) (bool, error) {
	name := strings.ToLower(filepath.Base(out))
	for _, ext := range []string{".tar.zst", ".tzst", ".zst"} {
		if strings.HasSuffix(name, ext) {
			return true, nil
		}
	}
	if strings.HasSuffix(name, ".tar") {
		if zstdFlag {
			return false, usagef("pack: --zstd with %s, a .tar name: name it %s", quotePath(out), quotePath(filepath.Base(out)+".zst"))
		}
		return false, nil
	}
	for _, ext := range []string{".gz", ".tgz", ".bz2", ".tbz", ".tbz2", ".xz", ".txz", ".lz4", ".zip", ".7z"} {
		if strings.HasSuffix(name, ext) {
			return false, usagef("pack: %s: pack writes tar or tar.zst, not %s (name it .tar or .tar.zst)", quotePath(out), ext)
		}
	}
	return zstdFlag, nil
}

// pathInside says whether the file path would be inside the directory dir
// (at any depth), comparing directories by identity so that symlinks, ".."
// and bind mounts do not hide it. path's directory exists (checkOutputFile).
func pathInside(path string, dir os.FileInfo) (bool, error) {
	p, err := filepath.Abs(filepath.Dir(path))
	if err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		return false, err
	}
	for {
		if st, err := os.Stat(p); err == nil && os.SameFile(st, dir) {
			return true, nil
		}
		up := filepath.Dir(p)
		if up == p {
			return false, nil
		}
		p = up
	}
}

// countFiles counts the regular files pack will find under dir, for the
// progress bar's total (directory entries only: no stat, no open).
func countFiles(ctx context.Context, dir string) (int64, bool) {
	root := dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		root = r
	}
	var n int64
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n, err == nil
}

// files returns a callback for a count of files, with their bytes shown
// as the rate's unit; the bar redraws at most ten times a second.
func (p *progress) files(total int64, what string) func(files, bytes int64) {
	return func(files, bytes int64) {
		if p.bar == nil {
			p.bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetDescription(what),
				progressbar.OptionSetWidth(30),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("files"),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionClearOnFinish(),
				progressbar.OptionThrottle(100*time.Millisecond),
			)
		}
		p.bar.Set64(files)
	}
}

// countNoun formats "1 file", "2 files".
func countNoun(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// renameErrs reports write errors under the archive's name rather than
// the temporary file's.
type renameErrs struct {
	w    io.Writer
	name string
}

func (r renameErrs) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	var pe *fs.PathError
	if err != nil && errors.As(err, &pe) {
		err = &fs.PathError{Op: pe.Op, Path: r.name, Err: pe.Err}
	}
	return n, err
}
