package bufpool

import (
	"bytes"
	"io"
	"os"
	"testing"
)

var benchSizes = []struct {
	name string
	n    int
}{
	{"4KiB", 4 << 10},
	{"64KiB", 64 << 10},
	{"1MiB", 1 << 20},
	{"64MiB", 64 << 20},
}

// BenchmarkReadAll reads from a reader that hides its size (it has only
// Read), as a network stream or a pipe would.
func BenchmarkReadAll(b *testing.B) {
	for _, s := range benchSizes {
		data := pattern(s.n, s.n)
		br := bytes.NewReader(data)
		r := &hidden{br}
		b.Run(s.name+"/bufpool", func(b *testing.B) {
			var p Pool
			// Steady state: one untimed call fills the pool and sets its hint.
			br.Reset(data)
			buf, _ := p.ReadAll(r)
			buf.Release()
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				br.Reset(data)
				buf, err := p.ReadAll(r)
				if err != nil || buf.Len() != s.n {
					b.Fatal(err)
				}
				buf.Release()
			}
		})
		b.Run(s.name+"/io.ReadAll", func(b *testing.B) {
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				br.Reset(data)
				got, err := io.ReadAll(r)
				if err != nil || len(got) != s.n {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/bytes.Buffer", func(b *testing.B) {
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				br.Reset(data)
				var buf bytes.Buffer
				if _, err := buf.ReadFrom(r); err != nil || buf.Len() != s.n {
					b.Fatal(err)
				}
			}
		})
		// For reference: one bytes.Buffer reused across reads, the hand-made
		// pool for a single goroutine.
		b.Run(s.name+"/bytes.Buffer-reused", func(b *testing.B) {
			var buf bytes.Buffer
			br.Reset(data)
			buf.ReadFrom(r) // steady state, untimed
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				br.Reset(data)
				buf.Reset()
				if _, err := buf.ReadFrom(r); err != nil || buf.Len() != s.n {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadFile reads a file in the page cache by name.
func BenchmarkReadFile(b *testing.B) {
	for _, s := range benchSizes[:2] {
		path := writeFile(b, b.TempDir(), pattern(s.n, s.n))
		b.Run(s.name+"/bufpool", func(b *testing.B) {
			var p Pool
			buf, _ := p.ReadFile(path) // steady state: fill the pool, untimed
			buf.Release()
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				buf, err := p.ReadFile(path)
				if err != nil || buf.Len() != s.n {
					b.Fatal(err)
				}
				buf.Release()
			}
		})
		b.Run(s.name+"/os.ReadFile", func(b *testing.B) {
			b.SetBytes(int64(s.n))
			b.ReportAllocs()
			for b.Loop() {
				got, err := os.ReadFile(path)
				if err != nil || len(got) != s.n {
					b.Fatal(err)
				}
			}
		})
	}
}
