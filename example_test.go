package iopath_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing/fstest"

	"github.com/iopath/iopath"
)

// exampleFile writes a file of n lines "line 0\n", "line 1\n", ... and
// returns its path and a function that removes it.
func exampleFile(n int) (string, func()) {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	path := filepath.Join(dir, "lines.txt")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	return path, func() { os.RemoveAll(dir) }
}

func ExampleReadFile() {
	path, cleanup := exampleFile(100_000)
	defer cleanup()

	data, err := iopath.ReadFile(path) // the slice is ours to keep
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(data), "bytes,", bytes.Count(data, []byte{'\n'}), "lines")
	// Output: 1088890 bytes, 100000 lines
}

func ExampleReadFileBuf() {
	path, cleanup := exampleFile(3)
	defer cleanup()

	b, err := iopath.ReadFileBuf(path)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Release() // once; b.Bytes() must not be used after it
	fmt.Printf("%q\n", b.Bytes())
	// Output: "line 0\nline 1\nline 2\n"
}

// Scan calls fn from several goroutines at once, with blocks in any
// order: keep per-call work independent, and combine with atomics or a
// mutex.
func ExampleScan() {
	path, cleanup := exampleFile(100_000)
	defer cleanup()

	var lines atomic.Int64
	err := iopath.Scan(context.Background(), path, func(off int64, b []byte) error {
		lines.Add(int64(bytes.Count(b, []byte{'\n'}))) // b is valid only during the call
		return nil
	}, iopath.WithBlockSize(64<<10))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lines.Load(), "lines")
	// Output: 100000 lines
}

// With WithOrdered the blocks come in offset order, one call at a time,
// so fn may keep state across blocks without a lock — here a running
// CRC, which must see the bytes in order.
func ExampleScan_ordered() {
	path, cleanup := exampleFile(100_000)
	defer cleanup()

	var crc uint32
	var next int64
	err := iopath.Scan(context.Background(), path, func(off int64, b []byte) error {
		if off != next {
			return fmt.Errorf("block at %d, expected %d", off, next)
		}
		crc = crc32.Update(crc, crc32.IEEETable, b)
		next += int64(len(b))
		return nil
	}, iopath.WithOrdered(), iopath.WithBlockSize(4096))
	if err != nil {
		log.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	fmt.Println(next, "bytes in order; crc matches:", crc == crc32.ChecksumIEEE(data))
	// Output: 1088890 bytes in order; crc matches: true
}

func ExampleOpen() {
	path, cleanup := exampleFile(1000)
	defer cleanup()

	f, err := iopath.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	// An io.ReaderAt: here through io.SectionReader.
	r := io.NewSectionReader(f, 7*10, 7)
	line, _ := io.ReadAll(r)
	fmt.Printf("%q of %d bytes\n", line, f.Size())

	// At the end of the file, n < len(p) comes with io.EOF.
	p := make([]byte, 16)
	n, err := f.ReadAt(p, f.Size()-4)
	fmt.Printf("%q %v\n", p[:n], err)
	// Output:
	// "line 10" of 8890 bytes
	// "999\n" EOF
}

// ReadBatch reads many requests in one call; each gets its own N and Err.
func ExampleFile_ReadBatch() {
	path, cleanup := exampleFile(1000)
	defer cleanup()

	f, err := iopath.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	reqs := []iopath.Request{
		{Off: 0, Buf: make([]byte, 6)},
		{Off: 7, Buf: make([]byte, 6)},      // adjacent ranges are read together
		{Off: 8881, Buf: make([]byte, 100)}, // runs past the end: io.EOF
	}
	err = f.ReadBatch(reqs) // the first request error, in slice order
	for _, r := range reqs {
		fmt.Printf("%q %v\n", r.Buf[:r.N], r.Err)
	}
	fmt.Println("batch:", err)
	// Output:
	// "line 0" <nil>
	// "line 1" <nil>
	// "line 999\n" EOF
	// batch: EOF
}

func Example_readFiles() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte("world!"), 0o644)

	var files, bytes atomic.Int64 // fn may be called concurrently
	err = iopath.ReadFiles(context.Background(), []string{dir}, func(path string, data []byte, err error) error {
		if err != nil {
			return err // stop at the first unreadable file
		}
		files.Add(1)
		bytes.Add(int64(len(data))) // data is valid only during this call
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(files.Load(), "files,", bytes.Load(), "bytes")
	// Output: 2 files, 11 bytes
}

// Options choose the path by hand; an unknown engine, a value out of
// range or an option that does not apply is an error from the call.
func Example_options() {
	path, cleanup := exampleFile(10)
	defer cleanup()

	_, err := iopath.ReadFile(path, iopath.WithEngine("readv"))
	fmt.Println(err)
	err = iopath.Scan(context.Background(), path, func(int64, []byte) error { return nil }, iopath.WithBlockSize(100))
	fmt.Println(err)

	var mu sync.Mutex
	var blocks int
	err = iopath.Scan(context.Background(), path,
		func(int64, []byte) error { mu.Lock(); blocks++; mu.Unlock(); return nil }, iopath.WithEngine("pread"), iopath.WithWorkers(2), iopath.WithBlockSize(512))
	fmt.Println(blocks, "block,", err)
	// Output:
	// iopath: ReadFile: unknown engine "readv" (have read, pread, mmap, io_uring)
	// iopath: block size 100 out of range [512, 64 MiB]
	// 1 block, <nil>
}

// Stat describes the file the File has open, from its descriptor; Size
// is its size when it was opened.
func ExampleFile_Stat() {
	path, cleanup := exampleFile(1000)
	defer cleanup()
	f, err := iopath.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fi.Name(), fi.Size(), f.Size(), fi.Mode().IsRegular())
	// Output: lines.txt 8890 8890 true
}

// ReadFilesFS reads from an fs.FS: here an in-memory one, with a
// directory that is walked and a name that does not exist.
func ExampleReadFilesFS() {
	fsys := fstest.MapFS{
		"etc/a.conf":     {Data: []byte("a=1\n")},
		"etc/sub/b.conf": {Data: []byte("b=22\n")},
	}
	var mu sync.Mutex
	var lines []string
	err := iopath.ReadFilesFS(context.Background(), fsys, []string{"etc", "missing.conf"},
		func(name string, data []byte, err error) error {
			mu.Lock() // fn may be called concurrently
			defer mu.Unlock()
			if err != nil {
				lines = append(lines, fmt.Sprintf("%s: not exist: %v", name, errors.Is(err, fs.ErrNotExist)))
				return nil // go on with the others
			}
			lines = append(lines, fmt.Sprintf("%s: %d bytes", name, len(data)))
			return nil
		})
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// etc/a.conf: 4 bytes
	// etc/sub/b.conf: 5 bytes
	// missing.conf: not exist: true
}

// A nil context is an error, not a panic.
func ExampleErrNilContext() {
	err := iopath.Scan(nil, "any", func(int64, []byte) error { return nil })
	fmt.Println(errors.Is(err, iopath.ErrNilContext), err)
	// Output: true iopath: nil context
}

// Plan says how a call would read a file, without reading it: log it, or
// pin it in a test.
func ExamplePlan() {
	path, cleanup := exampleFile(1000)
	defer cleanup()

	c, err := iopath.Plan(path, iopath.ForReadFile)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Engine, c.Workers, c.Rule)

	// The options a call takes change the plan as they change the call.
	c, err = iopath.Plan(path, iopath.ForScan, iopath.WithEngine("pread"), iopath.WithWorkers(2))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Engine, c.Workers, c.Rule)
	// Output:
	// read 1 small-file
	// pread 2 with-engine
}
