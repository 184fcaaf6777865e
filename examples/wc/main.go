package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/iopath/iopath"
	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/bufpool"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv))
}

// env looks up an environment variable, as os.LookupEnv does.
type env func(string) (string, bool)

// run is wc with its arguments, streams and environment given, so that
// tests can run it in process. It returns the exit status: 0, or 1 when
// a file could not be read or the usage was wrong (as GNU wc).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv env) int {
	_, posix := getenv("POSIXLY_CORRECT")
	opts, status, done := parseArgs(args, posix, stdout, stderr)
	if done {
		return status
	}
	loc := localeFrom(getenv)
	loc.posix = posix

	c := &counter{ctx: ctx, w: opts.w, loc: loc, stdin: stdin}
	if len(opts.operands) == 0 {
		c.stdinEntry("", false)
	}
	for _, op := range opts.operands {
		c.operand(op)
	}
	c.finishSmall()

	out := bufio.NewWriterSize(stdout, 64<<10)
	width := numberWidth(c.entries, opts.w)
	var total counts
	status = 0
	for i := range c.entries {
		e := &c.entries[i]
		if e.err != nil {
			// Flushed first, so that on a terminal lines and errors come
			// in GNU wc's order.
			out.Flush()
			fmt.Fprintf(stderr, "wc: %s: %s\n", quote(e.errName(), loc), describe(e.err))
			status = 1
		}
		if e.printed {
			writeCounts(out, e.c, opts.w, width, e.name, e.named, loc)
			total.add(e.c)
		}
	}
	if len(c.entries) > 1 {
		writeCounts(out, total, opts.w, width, "total", true, loc)
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(stderr, "wc: write error: %s\n", describe(err))
		return 1
	}
	if c.fatal != nil {
		fmt.Fprintf(stderr, "wc: %s\n", c.fatal)
		return 1
	}
	return status
}

// entry is one line of output: a file named on the command line, a file
// found by walking a directory named there, or standard input.
type entry struct {
	name    string // as printed: the operand, or the operand joined with the path below it
	named   bool   // false for standard input read without an operand
	c       counts
	printed bool  // a count line is printed (the file was opened)
	err     error // printed on stderr; the file was not read, or not to its end

	// What GNU wc's stat before counting would have seen, for the width
	// of the columns.
	statOK  bool
	regular bool
	size    int64
}

// errName is how the entry is named in an error message: GNU wc says
// "standard input" for standard input read without an operand.
func (e *entry) errName() string {
	if !e.named {
		return "standard input"
	}
	return e.name
}

// counter reads the operands and fills entries, in operand order.
type counter struct {
	ctx     context.Context
	w       what
	loc     locale
	stdin   io.Reader
	entries []entry
	fatal   error // a failure that is no single file's (ReadFiles stopped)

	// Small regular files wait here to be read in one ReadFiles call:
	// their index in entries, by path.
	small map[string][]int
}

// Files named on the command line this large or larger are read with
// Scan: in blocks, counted on several cores at once, never held whole in
// memory. Smaller ones are read whole, many at once, with ReadFiles,
// whose workers count them in parallel with each other.
const bigFile = 4 << 20

// sizeOnly reports whether only byte counts are asked for in a way that
// GNU wc answers from the file's size without reading it.
func (c *counter) sizeOnly() bool {
	return (c.w.bytes || c.w.chars) && !c.w.lines && !c.w.words && !c.w.maxLine && (!c.w.chars || !c.loc.utf8)
}

// operand adds the entries of one operand: stat says how it is read.
func (c *counter) operand(op string) {
	if op == "-" {
		c.stdinEntry("-", true)
		return
	}
	fi, err := os.Stat(op)
	if err != nil {
		c.entries = append(c.entries, entry{name: op, named: true, err: err})
		return
	}
	switch {
	case fi.IsDir():
		c.walk(op)
	case fi.Mode().IsRegular() && c.sizeOnly() && fi.Size()%int64(os.Getpagesize()) != 0:
		c.sizeOf(op, fi)
	case fi.Mode().IsRegular() && fi.Size() >= bigFile:
		c.entries = append(c.entries, c.scanFile(op, fi))
	case fi.Mode().IsRegular() && fi.Size() > 0:
		if c.small == nil {
			c.small = make(map[string][]int)
		}
		c.small[op] = append(c.small[op], len(c.entries))
		c.entries = append(c.entries, entry{name: op, named: true, statOK: true, regular: true, size: fi.Size()})
	default:
		// Empty regular files (which may be /proc files, whose size says
		// nothing), FIFOs and devices: read as a stream, as GNU wc does.
		c.entries = append(c.entries, c.streamFile(op, fi))
	}
}

// stdinEntry counts standard input, read as a stream.
func (c *counter) stdinEntry(name string, named bool) {
	e := entry{name: name, named: named}
	if f, ok := c.stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			e.statOK, e.regular, e.size = true, fi.Mode().IsRegular(), fi.Size()
		}
	} else {
		e.statOK = true // a pipe, as far as widths go
	}
	if c.stdin == nil {
		c.stdin = strings.NewReader("")
	}
	e.c, e.err = countReader(c.stdin, c.w, c.loc)
	e.printed = true
	c.entries = append(c.entries, e)
}

// sizeOf counts a regular file's bytes from its size, as GNU wc does
// when that is all it is asked: it opens the file (so that a file it may
// not read is reported) but reads nothing.
func (c *counter) sizeOf(op string, fi fs.FileInfo) {
	e := entry{name: op, named: true, statOK: true, regular: true, size: fi.Size()}
	f, err := os.Open(op)
	if err != nil {
		e.err = err
	} else {
		f.Close()
		e.c = counts{bytes: fi.Size(), chars: fi.Size()}
		e.printed = true
	}
	c.entries = append(c.entries, e)
}

// streamFile counts a file that is not read by size: opened, then read
// as a stream. A read error is reported after the counts of what was
// read, as GNU wc does.
func (c *counter) streamFile(op string, fi fs.FileInfo) entry {
	e := entry{name: op, named: true, statOK: true, regular: fi.Mode().IsRegular(), size: fi.Size()}
	f, err := os.Open(op)
	if err != nil {
		e.err = err
		return e
	}
	defer f.Close()
	e.c, e.err = countReader(f, c.w, c.loc)
	e.printed = true
	return e
}

// readChunk is the buffer for streams (standard input, FIFOs).
const readChunk = 256 << 10

// countReader counts a stream, chunk by chunk, in one pass.
func countReader(r io.Reader, w what, loc locale) (counts, error) {
	buf := bufpool.Get(readChunk)
	defer buf.Release()
	b := buf.Bytes()
	m := newCombiner(w, loc)
	for {
		n, err := r.Read(b)
		if n > 0 {
			s := summarize(b[:n], w, loc)
			m.add(&s)
		}
		if err == io.EOF {
			return m.result(), nil
		}
		if err != nil {
			return m.result(), err
		}
	}
}

// scanFile counts one large file with iopath.Scan: blocks arrive out of
// order, from several goroutines at once; each is summarized where it
// arrives, and the summaries are combined in offset order at the end.
func (c *counter) scanFile(op string, fi fs.FileInfo) entry {
	e := entry{name: op, named: true, statOK: true, regular: true, size: fi.Size()}
	type block struct {
		off int64
		s   summary
	}
	var mu sync.Mutex
	blocks := make([]block, 0, 1024)
	err := iopath.Scan(c.ctx, op, func(off int64, b []byte) error {
		s := summarize(b, c.w, c.loc)
		mu.Lock()
		blocks = append(blocks, block{off, s})
		mu.Unlock()
		return nil
	})
	if err != nil {
		e.err = err
		return e
	}
	slices.SortFunc(blocks, func(a, b block) int { return cmp.Compare(a.off, b.off) })
	m := newCombiner(c.w, c.loc)
	var next int64
	for i := range blocks {
		if blocks[i].off != next {
			e.err = &fs.PathError{Op: "scan", Path: op, Err: fmt.Errorf("block at %d, expected %d", blocks[i].off, next)}
			return e
		}
		next += blocks[i].s.n
		m.add(&blocks[i].s)
	}
	e.c = m.result()
	e.printed = true
	return e
}

// finishSmall reads the small regular files named on the command line,
// all in one ReadFiles call, and fills their entries.
func (c *counter) finishSmall() {
	if len(c.small) == 0 {
		return
	}
	paths := make([]string, 0, len(c.small))
	for p := range c.small {
		paths = append(paths, p)
	}
	var mu sync.Mutex
	err := iopath.ReadFiles(c.ctx, paths, func(path string, data []byte, err error) error {
		var cnt counts
		if err == nil {
			cnt = countAll(data, c.w, c.loc)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, i := range c.small[path] {
			e := &c.entries[i]
			e.c, e.err, e.printed = cnt, err, err == nil
		}
		return nil
	})
	if err != nil {
		c.fatal = err
	}
}

// walk counts every file under directory op with one ReadFiles call and
// adds an entry for each, in lexical order of the path below op.
func (c *counter) walk(op string) {
	root := cleanRoot(op)
	var mu sync.Mutex
	var found []entry
	err := iopath.ReadFiles(c.ctx, []string{op}, func(path string, data []byte, err error) error {
		e := entry{name: joinUnder(op, root, path), named: true, err: err}
		if err == nil {
			e.c = countAll(data, c.w, c.loc)
			e.printed = true
			e.statOK, e.regular, e.size = true, true, int64(len(data))
		}
		mu.Lock()
		found = append(found, e)
		mu.Unlock()
		return nil
	})
	if err != nil {
		c.fatal = err
	}
	slices.SortFunc(found, func(a, b entry) int { return comparePaths(a.name, b.name) })
	c.entries = append(c.entries, found...)
}

// cleanRoot is the directory as ReadFiles' walk spells the start of the
// paths it finds (filepath.Clean's form).
func cleanRoot(op string) string {
	return strings.TrimSuffix(filepath.Clean(op), "/")
}

// joinUnder respells path, found by walking root (op cleaned), as below
// op as the user typed it, the way find(1) prints what it finds.
func joinUnder(op, root, path string) string {
	rel, ok := strings.CutPrefix(path, root)
	if !ok {
		return path
	}
	rel = strings.TrimPrefix(rel, "/")
	switch {
	case rel == "":
		return op
	case strings.HasSuffix(op, "/"):
		return op + rel
	}
	return op + "/" + rel
}

// comparePaths orders paths as a directory walk in lexical order visits
// them: component by component, so "a/b" comes before "a.c" ('/' sorts
// before every other byte).
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x == '/' {
			return -1
		}
		if y == '/' {
			return 1
		}
		return int(x) - int(y)
	}
	return len(a) - len(b)
}

// numberWidth is the width of every number column, by GNU wc's rule
// (compute_number_width): the number of digits of the total size of the
// regular files, at least 7 if an input is not a regular file (a pipe, a
// device); just 1 when there is one input and one count, because GNU wc
// does not look at the input then.
func numberWidth(entries []entry, w what) int {
	if len(entries) == 1 && w.n() == 1 {
		return 1
	}
	width, minWidth := 1, 1
	var total uint64
	for i := range entries {
		e := &entries[i]
		switch {
		case !e.statOK:
		case e.regular:
			total += uint64(e.size)
		default:
			minWidth = 7
		}
	}
	for ; total >= 10; total /= 10 {
		width++
	}
	return max(width, minWidth)
}

// writeCounts prints one line: the counts asked for, right-aligned in
// width, separated by one space, then the name.
func writeCounts(out *bufio.Writer, c counts, w what, width int, name string, named bool, loc locale) {
	sep := ""
	for _, f := range [...]struct {
		on bool
		n  int64
	}{{w.lines, c.lines}, {w.words, c.words}, {w.chars, c.chars}, {w.bytes, c.bytes}, {w.maxLine, c.maxLine}} {
		if f.on {
			fmt.Fprintf(out, "%s%*d", sep, width, f.n)
			sep = " "
		}
	}
	if named {
		if strings.Contains(name, "\n") {
			name = quote(name, loc)
		}
		out.WriteString(" " + name)
	}
	out.WriteByte('\n')
}

// describe is an error's cause as the C library's strerror words it
// ("No such file or directory"): the path is printed separately.
func describe(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	var errno syscall.Errno
	if (errors.As(err, &errno) || errors.Is(err, batch.ErrNotRegular)) && s != "" {
		// Go's text for an errno is glibc's with a lower-case first letter.
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}
