package iopath

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/iopath/iopath/enginetest"
)

// Replace-while-reading: one path renamed over, in a loop, by versions of
// several sizes (see enginetest.Swap), read through every entry point and
// engine, warm and cold. Each result must be exactly one version, and none
// an error: the path always holds a complete file. A reader that opened
// the path twice (Scan's read engine with 2 workers did) or sized its
// reads from one file and read another (ReadFiles on io_uring did) mixes
// versions.

// newSwap is a Swap for one case of this file.
func newSwap(t *testing.T, cold bool) *enginetest.Swap {
	t.Helper()
	s := enginetest.NewSwap(t)
	s.Cold = cold
	return s
}

func cacheName(cold bool) string {
	if cold {
		return "cold"
	}
	return "warm"
}

func engineName(e string) string {
	if e == "" {
		return "auto"
	}
	return e
}

func TestReplacedWhileReadFiles(t *testing.T) {
	for _, e := range []string{"", "readfile", "pool", "raw", "io_uring"} {
		for _, workers := range []int{1, 2} {
			if e == "readfile" && workers > 1 {
				continue // one goroutine whatever the option says
			}
			for _, cold := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/workers=%d/%s", engineName(e), workers, cacheName(cold)), func(t *testing.T) {
					s := newSwap(t, cold)
					paths := make([]string, 64)
					for i := range paths {
						paths[i] = s.Path
					}
					opts := []Option{WithWorkers(workers)}
					if e != "" {
						opts = append(opts, WithEngine(e))
					}
					s.Hammer(t, func(got func([]byte, error)) error {
						err := ReadFiles(context.Background(), paths, func(_ string, b []byte, err error) error {
							got(b, err)
							return nil
						}, opts...)
						skipUnsupported(t, err)
						return err
					})
				})
			}
		}
	}
}

func TestReplacedWhileScan(t *testing.T) {
	for _, e := range append([]string{""}, scanEngines...) {
		for _, ordered := range []bool{false, true} {
			for _, workers := range []int{1, 2} {
				if workers == 1 && e != "" {
					continue // one worker reads through one descriptor
				}
				for _, cold := range []bool{false, true} {
					name := engineName(e)
					if ordered {
						name += "-ordered"
					}
					t.Run(fmt.Sprintf("%s/workers=%d/%s", name, workers, cacheName(cold)), func(t *testing.T) {
						s := newSwap(t, cold)
						opts := []Option{WithWorkers(workers), WithBlockSize(16 << 10)}
						if e != "" {
							opts = append(opts, WithEngine(e))
						}
						if ordered {
							opts = append(opts, WithOrdered())
						}
						buf := make([]byte, 2<<20)
						s.Hammer(t, func(got func([]byte, error)) error {
							var mu sync.Mutex
							end, total := int64(0), int64(0)
							err := Scan(context.Background(), s.Path, func(off int64, b []byte) error {
								if off+int64(len(b)) > int64(len(buf)) {
									return fmt.Errorf("block [%d,%d) past every version", off, off+int64(len(b)))
								}
								copy(buf[off:], b)
								mu.Lock()
								end = max(end, off+int64(len(b)))
								total += int64(len(b))
								mu.Unlock()
								return nil
							}, opts...)
							skipUnsupported(t, err)
							switch {
							case err != nil:
								got(nil, err)
							case total != end:
								got(nil, fmt.Errorf("blocks of %d bytes in all do not cover [0,%d)", total, end))
							default:
								got(buf[:end], nil)
							}
							return nil
						})
					})
				}
			}
		}
	}
}

func TestReplacedWhileReadFile(t *testing.T) {
	for _, e := range []string{"", "read", "pread", "mmap", "io_uring"} {
		for _, pooled := range []bool{false, true} {
			for _, cold := range []bool{false, true} {
				name := "ReadFile"
				if pooled {
					name = "ReadFileBuf"
				}
				t.Run(fmt.Sprintf("%s/%s/%s", name, engineName(e), cacheName(cold)), func(t *testing.T) {
					s := newSwap(t, cold)
					opts := []Option{WithWorkers(2), WithBlockSize(16 << 10)}
					if e != "" {
						opts = append(opts, WithEngine(e))
					}
					s.Hammer(t, func(got func([]byte, error)) error {
						if !pooled {
							b, err := ReadFile(s.Path, opts...)
							skipUnsupported(t, err)
							got(b, err)
							return nil
						}
						b, err := ReadFileBuf(s.Path, opts...)
						skipUnsupported(t, err)
						if err != nil {
							got(nil, err)
							return nil
						}
						got(b.Bytes(), nil)
						b.Release()
						return nil
					})
				})
			}
		}
	}
}

func TestReplacedWhileOpen(t *testing.T) {
	for _, e := range []string{"", "pread", "io_uring", "mmap"} {
		for _, cold := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s", engineName(e), cacheName(cold)), func(t *testing.T) {
				s := newSwap(t, cold)
				opts := []Option{WithWorkers(2)}
				if e != "" {
					opts = append(opts, WithEngine(e))
				}
				s.Hammer(t, func(got func([]byte, error)) error {
					f, err := Open(s.Path, opts...)
					skipUnsupported(t, err)
					if err != nil {
						got(nil, err)
						return nil
					}
					defer f.Close()
					// The whole file in one ReadAt, and again in a batch
					// of 16 KiB requests.
					b := make([]byte, f.Size())
					n, err := f.ReadAt(b, 0)
					if err == io.EOF && n == len(b) {
						err = nil
					}
					got(b[:n], err)
					var reqs []Request
					c := make([]byte, f.Size())
					for off := 0; off < len(c); off += 16 << 10 {
						reqs = append(reqs, Request{Off: int64(off), Buf: c[off:min(off+16<<10, len(c))]})
					}
					if err := f.ReadBatch(reqs); err != nil {
						got(nil, err)
						return nil
					}
					for _, r := range reqs {
						if r.Err != nil {
							got(nil, r.Err)
							return nil
						}
					}
					got(c, nil)
					return nil
				})
			})
		}
	}
}
