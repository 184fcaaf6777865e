package iopath_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath"
	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/fio"
	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/filesrv"
	"github.com/iopath/iopath/netio/writev"
)

// The error vocabulary: every package that can refuse io_uring, or be
// given something that is not a regular file, says so with the one value
// iopath exports, so that one errors.Is check works whichever layer a
// program calls.

// vocabularyFile writes a small regular file, and returns it with a FIFO
// and a directory holding a FIFO (the FIFO a walk finds).
func vocabularyFiles(t *testing.T) (file, fifo, dirWithFIFO string) {
	t.Helper()
	dir := t.TempDir()
	file = filepath.Join(dir, "file")
	if err := os.WriteFile(file, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	dirWithFIFO = filepath.Join(dir, "walked")
	if err := os.Mkdir(dirWithFIFO, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo = filepath.Join(dirWithFIFO, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	return file, fifo, dirWithFIFO
}

// engineRun prepares and runs engine name on path.
func engineRun(name, path string) error {
	e, err := engine.Lookup(name)
	if err != nil {
		return err
	}
	p, err := e.Prepare(engine.Job{Path: path})
	if err != nil {
		return err
	}
	defer p.Close()
	_, err = p.Run(context.Background(), engine.SinkFunc(func(int, int64, []byte) error { return nil }))
	return err
}

// batchRead reads paths with batch engine name and returns the first
// error: Read's own, or a file's.
func batchRead(name string, paths ...string) error {
	e, err := batch.Lookup(name)
	if err != nil {
		return err
	}
	var first error
	_, err = batch.Read(context.Background(), e, batch.Job{Paths: paths}, func(f *batch.File) error {
		if first == nil {
			first = f.Err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return first
}

// serveFile starts filesrv on path and returns Serve's error: at once
// when the server refuses, else nil once it is cancelled.
func serveFile(path, method string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a server that starts stops at once
	err = filesrv.Serve(ctx, ln, filesrv.ServerConfig{Path: path, Method: method})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func readFiles(paths []string, opts ...iopath.Option) error {
	var first error
	err := iopath.ReadFiles(context.Background(), paths, func(_ string, _ []byte, err error) error {
		if first == nil {
			first = err
		}
		return nil
	}, opts...)
	if err != nil {
		return err
	}
	return first
}

// TestErrNotSupportedEverywhere: with io_uring refused (DisableEnv, which
// the probe honours on every call), every io_uring path of every package
// fails with an error that matches iopath.ErrNotSupported and carries
// the probe's reason.
func TestErrNotSupportedEverywhere(t *testing.T) {
	file, _, _ := vocabularyFiles(t)
	t.Setenv(features.DisableEnv, "1")
	cases := []struct {
		name string
		do   func() error
	}{
		{"engine/io_uring", func() error { return engineRun("io_uring", file) }},
		{"batch/io_uring", func() error { return batchRead("io_uring", file) }},
		{"netio/io_uring", func() error {
			s, err := netio.Listen("io_uring", netio.Config{Addr: "127.0.0.1:0", Loops: 1})
			if err == nil {
				s.Close()
			}
			return err
		}},
		{"filesrv/io_uring", func() error { return serveFile(file, filesrv.IOURing) }},
		{"writev/io_uring", func() error { return writev.Supported(writev.IOURing) }},
		{"iopath.ReadFile", func() error {
			_, err := iopath.ReadFile(file, iopath.WithEngine("io_uring"))
			return err
		}},
		{"iopath.Open", func() error {
			f, err := iopath.Open(file, iopath.WithEngine("io_uring"))
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"iopath.ReadFiles", func() error { return readFiles([]string{file}, iopath.WithEngine("io_uring")) }},
		{"features.HaveOps", func() error { return features.HaveOps("READ") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if !errors.Is(err, iopath.ErrNotSupported) {
				t.Fatalf("err = %v, want one wrapping iopath.ErrNotSupported", err)
			}
			if want := features.DisableEnv; !strings.Contains(err.Error(), want) {
				t.Errorf("err = %q, want the probe's reason (naming %s)", err, want)
			}
		})
	}
}

// TestErrNotRegularEverywhere: a FIFO (and, where the reader's contract
// says so, a directory) given to each reader is an error matching
// iopath.ErrNotRegular. Nothing blocks on the FIFO, which has no writer.
func TestErrNotRegularEverywhere(t *testing.T) {
	_, fifo, walked := vocabularyFiles(t)
	type tc struct {
		name string
		do   func() error
	}
	var cases []tc
	for _, name := range engine.Names() {
		cases = append(cases, tc{"engine/" + name, func() error { return engineRun(name, fifo) }})
	}
	for _, name := range batch.Names() {
		if name == "archive" {
			continue // reads a packed archive, not paths
		}
		// A FIFO found by a walk: every batch engine reports it without
		// opening it (raw reads one named directly; see ErrNotRegular).
		cases = append(cases, tc{"batch/" + name, func() error { return batchRead(name, walked) }})
	}
	fioJob := func(path string) fio.Job {
		return fio.Job{Path: path, FileSize: 4096, Engine: "pread", BlockSize: 4096, Workers: 1}
	}
	cases = append(cases,
		tc{"fio/fifo", func() error { _, err := fio.Run(context.Background(), fio.Info{}, fioJob(fifo)); return err }},
		tc{"fio/dir", func() error { _, err := fio.Run(context.Background(), fio.Info{}, fioJob(walked)); return err }},
		tc{"filesrv/fifo", func() error { return serveFile(fifo, filesrv.ReadWrite) }},
		tc{"filesrv/dir", func() error { return serveFile(walked, filesrv.ReadWrite) }},
		tc{"iopath.ReadFile", func() error { _, err := iopath.ReadFile(fifo); return err }},
		tc{"iopath.Open", func() error {
			f, err := iopath.Open(fifo)
			if err == nil {
				f.Close()
			}
			return err
		}},
		tc{"iopath.ReadFiles", func() error { return readFiles([]string{walked}) }},
	)
	// A socket cannot be opened at all (ENXIO): named directly, it is
	// ErrNotRegular too, not "no such device or address".
	sock := filepath.Join(t.TempDir(), "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, name := range engine.Names() {
		cases = append(cases, tc{"engine/socket/" + name, func() error { return engineRun(name, sock) }})
	}
	for _, name := range []string{"readfile", "pool", "raw", "io_uring"} {
		cases = append(cases, tc{"iopath.ReadFiles/socket/" + name, func() error { return readFiles([]string{sock}, iopath.WithEngine(name)) }})
	}
	cases = append(cases,
		tc{"filesrv/socket", func() error { return serveFile(sock, filesrv.ReadWrite) }},
		tc{"iopath.ReadFile/socket", func() error { _, err := iopath.ReadFile(sock); return err }},
		tc{"iopath.Scan/socket", func() error {
			return iopath.Scan(context.Background(), sock, func(int64, []byte) error { return nil })
		}},
		tc{"iopath.Plan/socket", func() error { _, err := iopath.Plan(sock, iopath.ForReadFile); return err }},
		tc{"iopath.Open/socket", func() error {
			f, err := iopath.Open(sock)
			if err == nil {
				f.Close()
			}
			return err
		}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.HasSuffix(c.name, "/io_uring") {
				if r := features.Probe(); !r.IOURing.Available {
					// The engine refuses before it looks at the file.
					t.Skipf("io_uring unavailable here: %s", r.IOURing.Reason)
				}
			}
			err := c.do()
			if !errors.Is(err, iopath.ErrNotRegular) {
				t.Fatalf("err = %v, want one wrapping iopath.ErrNotRegular", err)
			}
		})
	}
}
