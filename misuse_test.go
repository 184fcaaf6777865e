package iopath

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/iopath/iopath/internal/testenv"
)

// Every misuse of the API gives the documented error, and neither a panic
// nor a read.

func TestMisuseNilFunc(t *testing.T) {
	testenv.CheckFDs(t)
	path := writeFile(t, t.TempDir(), []byte("data"))
	if err := Scan(context.Background(), path, nil); err != ErrNilFunc {
		t.Errorf("Scan: %v", err)
	}
	if err := Scan(context.Background(), path, nil, WithOrdered()); err != ErrNilFunc {
		t.Errorf("Scan ordered: %v", err)
	}
	if err := ReadFiles(context.Background(), []string{path}, nil); err != ErrNilFunc {
		t.Errorf("ReadFiles: %v", err)
	}
}

func TestMisuseNilContext(t *testing.T) {
	path := writeFile(t, t.TempDir(), []byte("data"))
	if err := Scan(nil, path, func(int64, []byte) error { return nil }); !errors.Is(err, ErrNilContext) {
		t.Errorf("Scan: %v", err)
	}
	if err := ReadFiles(nil, []string{path}, func(string, []byte, error) error { return nil }); !errors.Is(err, ErrNilContext) {
		t.Errorf("ReadFiles: %v", err)
	}
	fsys := fstest.MapFS{"a": {Data: []byte("a")}}
	if err := ReadFilesFS(nil, fsys, []string{"a"}, func(string, []byte, error) error { return nil }); !errors.Is(err, ErrNilContext) {
		t.Errorf("ReadFilesFS: %v", err)
	}
}

// A ctx cancelled before the call: ctx.Err(), and fn never called.
func TestMisuseCancelledBefore(t *testing.T) {
	testenv.CheckFDs(t)
	path := writeFile(t, t.TempDir(), content(1<<20, 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, opts := range [][]Option{nil, {WithOrdered()}, {WithEngine("mmap")}, {WithEngine("io_uring")}} {
		err := Scan(ctx, path, func(int64, []byte) error {
			t.Error("Scan called fn")
			return nil
		}, opts...)
		if err != context.Canceled {
			t.Errorf("Scan %d options: %v", len(opts), err)
		}
	}
	dctx, dcancel := context.WithTimeout(context.Background(), -1)
	defer dcancel()
	if err := Scan(dctx, path, func(int64, []byte) error { return nil }); err != context.DeadlineExceeded {
		t.Errorf("Scan past its deadline: %v", err)
	}
	for _, opts := range [][]Option{nil, {WithEngine("raw")}, {WithEngine("io_uring")}} {
		err := ReadFiles(ctx, []string{path}, func(string, []byte, error) error {
			t.Error("ReadFiles called fn")
			return nil
		}, opts...)
		if err != context.Canceled {
			t.Errorf("ReadFiles %d options: %v", len(opts), err)
		}
	}
}

func TestMisuseNegativeOffset(t *testing.T) {
	testenv.CheckFDs(t)
	data := content(10000, 2)
	path := writeFile(t, t.TempDir(), data)
	for _, o := range fileOpts {
		t.Run(o.name, func(t *testing.T) {
			f := openT(t, path, o.opts...)
			p := make([]byte, 10)
			n, err := f.ReadAt(p, -1)
			var pe *fs.PathError
			if n != 0 || !errors.Is(err, ErrNegativeOffset) || !errors.As(err, &pe) || pe.Op != "readat" || pe.Path != path {
				t.Errorf("%s ReadAt: %d, %v", o.name, n, err)
			}
			// One bad request fails alone; the others are read.
			reqs := []Request{{Off: 0, Buf: make([]byte, 10)}, {Off: -4096, Buf: make([]byte, 10)}, {Off: 100, Buf: make([]byte, 10)}}
			err = f.ReadBatch(reqs)
			if !errors.Is(err, ErrNegativeOffset) || err != reqs[1].Err || reqs[1].N != 0 {
				t.Errorf("%s ReadBatch: %v, %+v", o.name, err, reqs[1])
			}
			if reqs[0].Err != nil || !bytes.Equal(reqs[0].Buf, data[:10]) || reqs[2].Err != nil || !bytes.Equal(reqs[2].Buf, data[100:110]) {
				t.Errorf("%s ReadBatch: the good requests: %+v %+v", o.name, reqs[0], reqs[2])
			}
			f.Close()
		})
	}
}

// A closed File: reads fail with an *fs.PathError{Op: "read", Err:
// fs.ErrClosed}, as os.File's do, and a second Close with Op "close".
func TestMisuseClosedFile(t *testing.T) {
	testenv.CheckFDs(t)
	path := writeFile(t, t.TempDir(), []byte("data"))
	for _, o := range fileOpts {
		t.Run(o.name, func(t *testing.T) {
			f := openT(t, path, o.opts...)
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			isClosed := func(err error, op string) bool {
				var pe *fs.PathError
				return errors.As(err, &pe) && pe.Op == op && pe.Path == path && pe.Err == fs.ErrClosed
			}
			if n, err := f.ReadAt(make([]byte, 4), 0); n != 0 || !isClosed(err, "read") {
				t.Errorf("%s ReadAt: %d, %v", o.name, n, err)
			}
			reqs := []Request{{Buf: make([]byte, 4)}, {Off: 1, Buf: make([]byte, 4)}}
			if err := f.ReadBatch(reqs); !isClosed(err, "read") || reqs[0].Err != err || reqs[1].Err != err || reqs[0].N != 0 {
				t.Errorf("%s ReadBatch: %v, %+v", o.name, err, reqs)
			}
			if !bytes.Equal(reqs[0].Buf, make([]byte, 4)) {
				t.Errorf("%s ReadBatch read from a closed File", o.name)
			}
			if err := f.Close(); !isClosed(err, "close") {
				t.Errorf("%s second Close: %v", o.name, err)
			}
		})
	}
}

// Requests whose buffers share memory: ErrOverlap, and nothing read.
func TestMisuseOverlap(t *testing.T) {
	testenv.CheckFDs(t)
	path := writeFile(t, t.TempDir(), content(100000, 3))
	for _, o := range fileOpts {
		t.Run(o.name, func(t *testing.T) {
			f := openT(t, path, o.opts...)
			buf := make([]byte, 8192)
			for _, reqs := range [][]Request{
				{{Off: 0, Buf: buf[:4096]}, {Off: 4096, Buf: buf[4095:8191]}},                            // one byte shared
				{{Off: 0, Buf: buf[100:200]}, {Off: 9, Buf: make([]byte, 3)}, {Off: 50, Buf: buf[:150]}}, // out of order
				{{Off: 0, Buf: buf[:10]}, {Off: 0, Buf: buf[:10]}},                                       // the same buffer twice
			} {
				clear(buf)
				err := f.ReadBatch(reqs)
				var pe *fs.PathError
				if !errors.Is(err, ErrOverlap) || !errors.As(err, &pe) || pe.Op != "readbatch" || pe.Path != path {
					t.Errorf("%s: %v", o.name, err)
				}
				for i, r := range reqs {
					if r.Err != err || r.N != 0 {
						t.Errorf("%s: request %d: %d, %v", o.name, i, r.N, r.Err)
					}
				}
				if !bytes.Equal(buf, make([]byte, len(buf))) {
					t.Errorf("%s: read despite the overlap", o.name)
				}
			}
			// Adjacent buffers do not overlap; empty ones overlap nothing.
			reqs := []Request{{Off: 0, Buf: buf[:4096]}, {Off: 4096, Buf: buf[4096:]}, {Off: 7, Buf: buf[100:100]}}
			if err := f.ReadBatch(reqs); err != nil {
				t.Errorf("%s adjacent buffers: %v", o.name, err)
			}
			f.Close()
		})
	}
}
