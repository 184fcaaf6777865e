package iopath

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/iopath/iopath/internal/testenv"
)

// Every error path of the public API says "iopath: " first and keeps what
// it wraps reachable: errors.Is for the cause, errors.As for the
// *fs.PathError naming the file.
func TestErrorsSayIopath(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	path := writeFile(t, dir, content(10000, 3))
	ctx := context.Background()
	never := func(int64, []byte) error { return nil }
	each := func(string, []byte, error) error { return nil }
	bad := WithWorkers(-1)
	// fileErr runs fn and returns the error ReadFiles or ReadFilesFS
	// handed to fn for the one file, or what the call returned.
	var perFile error
	onFile := func(_ string, _ []byte, err error) error { perFile = err; return nil }
	files := func(call func() error) func() error {
		return func() error {
			perFile = nil
			if err := call(); err != nil {
				return err
			}
			return perFile
		}
	}
	mapFS := fstest.MapFS{"d/x": {Data: []byte("x")}, "fifo": {Mode: fs.ModeNamedPipe}}
	open := func() *File {
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	closed := open()
	closed.Close()

	for _, tc := range []struct {
		name string
		call func() error
		is   error
		path string // the *fs.PathError's Path; "" when there is none
	}{
		{"ReadFile missing", func() error { _, err := ReadFile(missing); return err }, fs.ErrNotExist, missing},
		{"ReadFile directory", func() error { _, err := ReadFile(dir); return err }, syscall.EISDIR, dir},
		{"ReadFile bad option", func() error { _, err := ReadFile(path, bad); return err }, nil, ""},
		{"ReadFile mmap direct", func() error { _, err := ReadFile(path, WithEngine("mmap"), WithDirect()); return err }, ErrNotSupported, ""},
		{"ReadFileBuf missing", func() error { _, err := ReadFileBuf(missing); return err }, fs.ErrNotExist, missing},
		{"ReadFileBuf directory", func() error { _, err := ReadFileBuf(dir); return err }, syscall.EISDIR, dir},
		{"Scan missing", func() error { return Scan(ctx, missing, never) }, fs.ErrNotExist, missing},
		{"Scan directory", func() error { return Scan(ctx, dir, never) }, syscall.EISDIR, dir},
		{"Scan nil ctx", func() error { return Scan(nil, path, never) }, ErrNilContext, ""},
		{"Scan nil fn", func() error { return Scan(ctx, path, nil) }, ErrNilFunc, ""},
		{"Scan bad option", func() error { return Scan(ctx, path, never, bad) }, nil, ""},
		{"Open missing", func() error { _, err := Open(missing); return err }, fs.ErrNotExist, missing},
		{"Open directory", func() error { _, err := Open(dir); return err }, syscall.EISDIR, dir},
		{"Open bad option", func() error { _, err := Open(path, WithBlockSize(4096)); return err }, nil, ""},
		{"ReadAt negative", func() error { f := open(); defer f.Close(); _, err := f.ReadAt(make([]byte, 1), -1); return err }, ErrNegativeOffset, path},
		{"ReadAt closed", func() error { _, err := closed.ReadAt(make([]byte, 1), 0); return err }, fs.ErrClosed, path},
		{"ReadBatch overlap", func() error {
			f := open()
			defer f.Close()
			b := make([]byte, 10)
			return f.ReadBatch([]Request{{Buf: b}, {Off: 5, Buf: b[5:]}})
		}, ErrOverlap, path},
		{"Close twice", func() error { return closed.Close() }, fs.ErrClosed, path},
		{"Stat closed", func() error { _, err := closed.Stat(); return err }, fs.ErrClosed, path},
		{"ReadFiles missing", files(func() error { return ReadFiles(ctx, []string{missing}, onFile) }), fs.ErrNotExist, missing},
		{"ReadFiles nil ctx", func() error { return ReadFiles(nil, []string{path}, each) }, ErrNilContext, ""},
		{"ReadFiles bad option", func() error { return ReadFiles(ctx, []string{path}, each, bad) }, nil, ""},
		{"ReadFilesFS missing", files(func() error { return ReadFilesFS(ctx, mapFS, []string{"nope"}, onFile) }), fs.ErrNotExist, "nope"},
		{"ReadFilesFS invalid name", files(func() error { return ReadFilesFS(ctx, mapFS, []string{"/abs"}, onFile) }), fs.ErrInvalid, "/abs"},
		{"ReadFilesFS FIFO", files(func() error { return ReadFilesFS(ctx, mapFS, []string{"fifo"}, onFile) }), ErrNotRegular, "fifo"},
		{"ReadFilesFS nil ctx", func() error { return ReadFilesFS(nil, mapFS, []string{"d"}, each) }, ErrNilContext, ""},
		{"ReadFilesFS raw", func() error { return ReadFilesFS(ctx, mapFS, []string{"d"}, each, WithEngine("raw")) }, ErrNotSupported, ""},
		{"ReadFilesFS bad option", func() error { return ReadFilesFS(ctx, mapFS, []string{"d"}, each, WithBlockSize(4096)) }, nil, ""},
		{"ReadFilesFS nil FS", func() error { return ReadFilesFS(ctx, nil, []string{"d"}, each) }, nil, ""},
	} {
		err := tc.call()
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.name)
			continue
		case !strings.HasPrefix(err.Error(), "iopath: "):
			t.Errorf("%s: %q does not start with \"iopath: \"", tc.name, err)
		case strings.Count(err.Error(), "iopath:") > 1:
			t.Errorf("%s: %q says iopath twice", tc.name, err)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v does not wrap %v", tc.name, err, tc.is)
		}
		var pe *fs.PathError
		if tc.path != "" && (!errors.As(err, &pe) || pe.Path != tc.path) {
			t.Errorf("%s: %v: no *fs.PathError for %s", tc.name, err, tc.path)
		}
	}
}

// What passes through unchanged: io.EOF, ctx.Err(), and the callbacks'
// own errors.
func TestErrorsPassThrough(t *testing.T) {
	testenv.CheckFDs(t)
	path := writeFile(t, t.TempDir(), content(300<<10, 4))
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(make([]byte, 10), 300<<10-5); err != io.EOF {
		t.Errorf("ReadAt at the end: %v, want io.EOF itself", err)
	}
	reqs := []Request{{Off: 300<<10 - 5, Buf: make([]byte, 10)}}
	if err := f.ReadBatch(reqs); err != io.EOF || reqs[0].Err != io.EOF {
		t.Errorf("ReadBatch at the end: %v (request %v), want io.EOF itself", err, reqs[0].Err)
	}
	mine := errors.New("mine")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, opts := range [][]Option{nil, {WithOrdered()}, {WithOrdered(), WithEngine("pread"), WithWorkers(2), WithBlockSize(4096)}} {
		if err := Scan(context.Background(), path, func(int64, []byte) error { return mine }, opts...); err != mine {
			t.Errorf("Scan %d options, fn's error: %v", len(opts), err)
		}
		if err := Scan(ctx, path, func(int64, []byte) error { return nil }, opts...); err != context.Canceled {
			t.Errorf("Scan %d options, cancelled: %v", len(opts), err)
		}
	}
	if err := ReadFiles(context.Background(), []string{path}, func(string, []byte, error) error { return mine }); err != mine {
		t.Errorf("ReadFiles, fn's error: %v", err)
	}
	fsys := fstest.MapFS{"a": {Data: []byte("a")}}
	if err := ReadFilesFS(context.Background(), fsys, []string{"a"}, func(string, []byte, error) error { return mine }); err != mine {
		t.Errorf("ReadFilesFS, fn's error: %v", err)
	}
	if err := ReadFilesFS(ctx, fsys, []string{"a"}, func(string, []byte, error) error { return nil }); err != context.Canceled {
		t.Errorf("ReadFilesFS, cancelled: %v", err)
	}
}

// ReadBatch returns the first failing request's own error, in its public
// form, and the requests that share an error share its public form.
func TestErrorsReadBatchShared(t *testing.T) {
	testenv.CheckFDs(t)
	path := writeFile(t, t.TempDir(), content(10000, 5))
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	reqs := []Request{{Buf: make([]byte, 10)}, {Off: 20, Buf: make([]byte, 10)}}
	err = f.ReadBatch(reqs)
	if !errors.Is(err, fs.ErrClosed) || reqs[0].Err != err || reqs[1].Err != err || !strings.HasPrefix(err.Error(), "iopath: ") {
		t.Errorf("closed File: %v; requests %v, %v", err, reqs[0].Err, reqs[1].Err)
	}
	g := openT(t, path)
	defer g.Close()
	reqs = []Request{{Off: 0, Buf: make([]byte, 10)}, {Off: -1, Buf: make([]byte, 10)}, {Off: -2, Buf: make([]byte, 10)}}
	err = g.ReadBatch(reqs)
	if !errors.Is(err, ErrNegativeOffset) || err != reqs[1].Err || reqs[0].Err != nil || !errors.Is(reqs[2].Err, ErrNegativeOffset) {
		t.Errorf("negative offsets: %v; requests %v, %v, %v", err, reqs[0].Err, reqs[1].Err, reqs[2].Err)
	}
}
