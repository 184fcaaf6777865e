package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// textBlock is n bytes of text-like data: words, spaces, tabs, newlines,
// a few multibyte characters.
func textBlock(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	pieces := []string{"func", "return", "x", "err", " ", " ", "\t", "\n", "(", ")", "{", "}", "é", "中", ":=", "// comment", "0x1f"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.Bytes()[:n]
}

// BenchmarkSummarize is the counting core alone, one goroutine, on a
// 1 MiB block in memory: what each kind of count costs per byte.
func BenchmarkSummarize(b *testing.B) {
	data := textBlock(1<<20, 1)
	for _, bc := range []struct {
		name string
		w    what
		loc  locale
	}{
		{"lines", what{lines: true}, locale{}},
		{"words/C", what{words: true}, locale{}},
		{"default/C", what{lines: true, words: true, bytes: true}, locale{}},
		{"maxline/C", what{maxLine: true}, locale{}},
		{"default/UTF-8", what{lines: true, words: true, bytes: true}, locale{utf8: true}},
		{"chars/UTF-8", what{chars: true}, locale{utf8: true}},
		{"all/UTF-8", what{true, true, true, true, true}, locale{utf8: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				summarize(data, bc.w, bc.loc)
			}
		})
	}
}

// BenchmarkCountFile is our whole path for one big file in process:
// Scan with default options, summaries on the workers, the combination.
// A 32 MiB file by default; the 1 GiB ones with IOPATH_BENCH_FULL=1. Run
// it with -cpuprofile to see where the time goes.
func BenchmarkCountFile(b *testing.B) {
	files := map[string]string{}
	if os.Getenv("IOPATH_BENCH_FULL") == "1" {
		files["random"], files["text"] = "/var/tmp/iopath-wc-1g.dat", "/var/tmp/iopath-wc-text-1g.txt"
	} else {
		files["text"] = filepath.Join(b.TempDir(), "text")
		if err := os.WriteFile(files["text"], textBlock(32<<20, 5), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, name := range []string{"random", "text"} {
		path, ok := files[name]
		if !ok {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			b.Skipf("%v: run examples/wc/bench.sh once to make the 1 GiB files", err)
		}
		for _, w := range []what{{lines: true}, {lines: true, words: true, bytes: true}} {
			b.Run(name+"/-"+w.String(), func(b *testing.B) {
				c := &counter{ctx: context.Background(), w: w}
				b.SetBytes(fi.Size())
				for b.Loop() {
					if e := c.scanFile(path, fi); e.err != nil {
						b.Fatal(e.err)
					}
				}
			})
		}
	}
}

// BenchmarkVsGNU runs our wc (this test binary acting as main, so that
// both sides pay a process start) and GNU wc alternately, b.N times
// each, and reports each side's mean wall time and the ratio gnu/ours
// (above 1: ours is faster). By default on small inputs made here, so
// that it is cheap in CI; with IOPATH_BENCH_FULL=1 on the 1 GiB files
// bench.sh makes and on $(go env GOROOT)/src (see README.md).
func BenchmarkVsGNU(b *testing.B) {
	gnu, err := exec.LookPath("wc")
	if err != nil {
		b.Skip("GNU wc is not on PATH: nothing to compare with")
	}
	var randFile, textFile, tree string
	if os.Getenv("IOPATH_BENCH_FULL") == "1" {
		randFile, textFile = "/var/tmp/iopath-wc-1g.dat", "/var/tmp/iopath-wc-text-1g.txt"
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			b.Fatalf("go env GOROOT: %v", err)
		}
		tree = filepath.Join(strings.TrimSpace(string(out)), "src")
		for _, p := range []string{randFile, textFile, tree} {
			if _, err := os.Stat(p); err != nil {
				b.Skipf("%v: run examples/wc/bench.sh once to make the 1 GiB files", err)
			}
		}
	} else {
		dir := b.TempDir()
		randFile = filepath.Join(dir, "rand")
		textFile = filepath.Join(dir, "text")
		r := rand.New(rand.NewPCG(2, 3))
		rb := make([]byte, 32<<20)
		for i := range rb {
			rb[i] = byte(r.Uint32())
		}
		tree = filepath.Join(dir, "tree")
		write := func(p string, data []byte) {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		write(randFile, rb)
		write(textFile, textBlock(32<<20, 4))
		for i := range 1000 {
			write(filepath.Join(tree, fmt.Sprintf("d%02d/f%04d.go", i%20, i)), textBlock(1000+i*13%9000, uint64(i)))
		}
	}
	warm := func(paths ...string) {
		for _, p := range paths {
			filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					f, err := os.Open(path)
					if err == nil {
						buf := make([]byte, 1<<20)
						for {
							if _, err := f.Read(buf); err != nil {
								break
							}
						}
						f.Close()
					}
				}
				return nil
			})
		}
	}
	warm(randFile, textFile, tree)
	for _, bc := range []struct {
		name      string
		ours, gnu []string // command lines: program first
	}{
		{"wc-l/random", []string{"wc", "-l", randFile}, []string{gnu, "-l", randFile}},
		{"wc-l/text", []string{"wc", "-l", textFile}, []string{gnu, "-l", textFile}},
		{"wc/text", []string{"wc", textFile}, []string{gnu, textFile}},
		{"wc/tree", []string{"wc", tree}, []string{"sh", "-c", "find \"$0\" -type f -print0 | xargs -0 " + gnu, tree}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var ours, theirs time.Duration
			for b.Loop() {
				ours += timeRun(b, true, bc.ours)
				theirs += timeRun(b, false, bc.gnu)
			}
			b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "ours-ns/op")
			b.ReportMetric(float64(theirs.Nanoseconds())/float64(b.N), "gnu-ns/op")
			b.ReportMetric(float64(theirs)/float64(ours), "gnu/ours")
		})
	}
}

// timeRun runs one command line with LC_ALL=C, output discarded, and
// returns its wall time; ours runs this test binary as wc.
func timeRun(b *testing.B, ours bool, argv []string) time.Duration {
	b.Helper()
	var cmd *exec.Cmd
	if ours {
		cmd = exec.Command(os.Args[0], argv[1:]...)
		cmd.Env = []string{"IOPATH_WC_TEST_MAIN=1", "LC_ALL=C"}
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	}
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%q: %v", argv, err)
	}
	return time.Since(t0)
}
