package iopath

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/features"
)

// Files of a pseudo-filesystem state a size that means nothing (4096 for
// a sysfs attribute, 0 in /proc) and cannot be mapped: every engine,
// ordered or not, reads them to their end with read(2).
func TestPseudoFiles(t *testing.T) {
	checkFDs(t)
	paths := []string{"/sys/kernel/mm/transparent_hugepage/enabled", "/proc/self/status"}
	for _, path := range paths {
		if _, err := os.Stat(path); err != nil {
			t.Logf("skipping %s: %v", path, err)
			continue
		}
		// /proc/self/status changes from read to read; its first line
		// does not.
		check := func(t *testing.T, what string, got []byte) {
			t.Helper()
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(path, "/proc") {
				first := want[:bytes.IndexByte(want, '\n')+1]
				if !bytes.HasPrefix(got, first) || !bytes.HasSuffix(got, []byte("\n")) {
					t.Errorf("%s %s: %q", what, path, got)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s: %q, want %q", what, path, got, want)
			}
		}
		for _, e := range []string{"", "read", "pread", "mmap", "io_uring"} {
			var opts []Option
			if e != "" {
				opts = append(opts, WithEngine(e))
			}
			t.Run(filepath.Base(path)+"-"+e, func(t *testing.T) {
				b, err := ReadFile(path, opts...)
				skipUnsupported(t, err)
				if err != nil {
					t.Fatalf("ReadFile: %v", err)
				}
				check(t, "ReadFile", b)
				pb, err := ReadFileBuf(path, opts...)
				if err != nil {
					t.Fatalf("ReadFileBuf: %v", err)
				}
				check(t, "ReadFileBuf", pb.Bytes())
				pb.Release()
				for _, ordered := range []bool{false, true} {
					o := append(opts[:len(opts):len(opts)], WithWorkers(2))
					if ordered {
						o = append(o, WithOrdered())
					}
					var got []byte
					err := Scan(context.Background(), path, o, func(off int64, b []byte) error {
						if off != int64(len(got)) {
							t.Errorf("block at %d after %d bytes", off, len(got))
						}
						got = append(got, b...)
						return nil
					})
					if err != nil {
						t.Fatalf("Scan ordered %v: %v", ordered, err)
					}
					check(t, "Scan", got)
				}
			})
		}
	}
}

// An explicit engine that cannot run here fails the same way for every
// file, also for those read without it (empty, pseudo-files).
func TestExplicitEngineUnavailableShortcuts(t *testing.T) {
	checkFDs(t)
	t.Setenv(features.DisableEnv, "1")
	empty := writeFile(t, t.TempDir(), nil)
	for _, path := range []string{empty, "/proc/self/status"} {
		opts := []Option{WithEngine("io_uring")}
		if _, err := ReadFile(path, opts...); !errors.Is(err, ErrNotSupported) {
			t.Errorf("ReadFile %s: %v, want ErrNotSupported", path, err)
		}
		if _, err := ReadFileBuf(path, opts...); !errors.Is(err, ErrNotSupported) {
			t.Errorf("ReadFileBuf %s: %v, want ErrNotSupported", path, err)
		}
		for _, o := range [][]Option{opts, append(opts, WithOrdered())} {
			err := Scan(context.Background(), path, o, func(int64, []byte) error { return nil })
			if !errors.Is(err, ErrNotSupported) {
				t.Errorf("Scan %s: %v, want ErrNotSupported", path, err)
			}
		}
	}
}
