package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// refCount is GNU wc's loop (src/wc.c, coreutils 9.1) transcribed one
// character at a time, with no blocks and no fast paths: the reference
// the block summaries and the combiner must agree with.
func refCount(b []byte, loc locale) counts {
	c := counts{bytes: int64(len(b))}
	inWord := false
	var pos int64
	for i := 0; i < len(b); {
		var k uint8
		width := int64(1)
		if b[i] < 0x80 || !loc.utf8 {
			k = cClass[b[i]]
			i++
			c.chars++
		} else {
			r, size := decode(b[i:])
			if size < 0 {
				break // an unfinished character at the end is not one
			}
			if size == 0 {
				i++
				continue
			}
			i += size
			c.chars++
			k, width = classify(r, loc)
		}
		switch k {
		case cNone:
			continue
		case cWord:
			pos += width
			inWord = true
			continue
		case cNL, cCR:
			if k == cNL {
				c.lines++
			}
			c.maxLine = max(c.maxLine, pos)
			pos = 0
		case cTab:
			pos += 8 - pos%8
		case cSpace:
			pos += width
		}
		if inWord {
			c.words++
		}
		inWord = false
	}
	if inWord {
		c.words++
	}
	c.maxLine = max(c.maxLine, pos)
	return c
}

// pick keeps the counts w asks for, the others zero.
func pick(c counts, w what) counts {
	var o counts
	if w.lines {
		o.lines = c.lines
	}
	if w.words {
		o.words = c.words
	}
	if w.chars {
		o.chars = c.chars
	}
	if w.bytes {
		o.bytes = c.bytes
	}
	if w.maxLine {
		o.maxLine = c.maxLine
	}
	return o
}

// allWhats is every non-empty combination of the five counts.
func allWhats() []what {
	var ws []what
	for m := 1; m < 32; m++ {
		ws = append(ws, what{m&1 != 0, m&2 != 0, m&4 != 0, m&8 != 0, m&16 != 0})
	}
	return ws
}

func (w what) String() string {
	var b strings.Builder
	for i, f := range [...]bool{w.lines, w.words, w.chars, w.bytes, w.maxLine} {
		if f {
			b.WriteByte("lwmcL"[i])
		}
	}
	return b.String()
}

var locales = []locale{{}, {utf8: true}, {utf8: true, posix: true}}

func (l locale) String() string {
	switch {
	case l.utf8 && l.posix:
		return "utf8+posix"
	case l.utf8:
		return "utf8"
	}
	return "C"
}

// splitCount counts b cut at the given offsets (ascending, within b),
// summarizing the pieces in reverse order, as out-of-order blocks would
// arrive, and combining them in file order.
func splitCount(b []byte, cuts []int, w what, loc locale) counts {
	bounds := append(append([]int{0}, cuts...), len(b))
	sums := make([]summary, len(bounds)-1)
	for i := len(sums) - 1; i >= 0; i-- {
		sums[i] = summarize(b[bounds[i]:bounds[i+1]], w, loc)
	}
	m := newCombiner(w, loc)
	for i := range sums {
		m.add(&sums[i])
	}
	return m.result()
}

// corpus is inputs that exercise every class, every boundary kind and
// UTF-8 forms glibc takes that Go does not, and the reverse.
var corpus = []string{
	"",
	"\n",
	"\n\n\n",
	"hello",
	"hello world\n",
	"  two  words  \n",
	"a\x00b c\n",
	"\x80x \xff y\n",
	"a\x01b\n\x7f\x7f\n",
	"a\vb\fc\rd\n",
	"ab\rcdef\n",
	"\tx\n\t\tyy\tz \t\n",
	"1234567\t8\n12345678\t9",
	"line one\r\nline two\r\n",
	"héllo wörld\n",
	"中文 字\n日本語\tx\n",
	"a\u00a0b\u2007c\u202fd\u2060e f\n",
	"a\u3000b\u1680c\u2028d\u2029e\u0085f\n",
	"\xe4\xb8",
	"x\xe4\xb8Ay\n",
	"\xed\xa0\x80 \xc0\x80 \xe0\x80\x80 \xf0\x80\x80\x80\n",
	"\xf4\x90\x80\x80 \xf5\x80\x80\x80 \xf8\x88\x80\x80\x80 \xfc\x84\x80\x80\x80\x80 \xfe\xff\n",
	"\xf8\x87\xbf\xbf\xbf \xfd\xbf\xbf\xbf\xbf\xbf\n",
	"e\u0301\u0301 \U0001F600\U0001F600 \uFFFD\n",
	"\x80\x80\x80 word",
	strings.Repeat("ab \t", 50) + "\n" + strings.Repeat("x", 300),
}

// TestSplitEveryBoundary cuts each corpus input at every offset, and into
// single bytes, and checks the combined summaries against refCount for
// every combination of counts and each locale.
func TestSplitEveryBoundary(t *testing.T) {
	for _, loc := range locales {
		for _, w := range allWhats() {
			for ci, s := range corpus {
				b := []byte(s)
				want := pick(refCount(b, loc), w)
				if got := pick(countAll(b, w, loc), w); got != want {
					t.Fatalf("%v -%v corpus[%d] %q whole: got %+v, want %+v", loc, w, ci, s, got, want)
				}
				for i := 0; i <= len(b); i++ {
					if got := pick(splitCount(b, []int{i}, w, loc), w); got != want {
						t.Fatalf("%v -%v corpus[%d] %q cut at %d: got %+v, want %+v", loc, w, ci, s, i, got, want)
					}
				}
				ones := make([]int, 0, len(b))
				for i := 1; i < len(b); i++ {
					ones = append(ones, i)
				}
				if got := pick(splitCount(b, ones, w, loc), w); got != want {
					t.Fatalf("%v -%v corpus[%d] %q in single bytes: got %+v, want %+v", loc, w, ci, s, got, want)
				}
			}
		}
	}
}

// TestRefCountKnown pins refCount itself to what GNU wc 9.1 printed here
// for a few inputs (LC_ALL=C and LC_ALL=C.UTF-8), so that the reference
// cannot drift along with the code it checks.
func TestRefCountKnown(t *testing.T) {
	for _, tc := range []struct {
		in   string
		loc  locale
		want counts // lines words chars bytes maxLine
	}{
		{"a\x00b c\n", locale{}, counts{1, 2, 6, 6, 4}},
		{"\x80x \xff y\n", locale{}, counts{1, 2, 7, 7, 4}},
		{"a\x01b\n", locale{}, counts{1, 1, 4, 4, 2}},
		{"a\vb\fc\rd\n", locale{}, counts{1, 4, 8, 8, 2}},
		{"\tx\n", locale{}, counts{1, 1, 3, 3, 9}},
		{"hello", locale{}, counts{0, 1, 5, 5, 5}},
		{"\x80x \xff y\n", locale{utf8: true}, counts{1, 2, 5, 7, 4}},
		{"héllo wörld\n", locale{utf8: true}, counts{1, 2, 12, 14, 11}},
		{"a\u00a0b\n", locale{utf8: true}, counts{1, 2, 4, 5, 3}},
		{"a\u3000b\n", locale{utf8: true}, counts{1, 2, 4, 6, 4}},
		{"中文\n", locale{utf8: true}, counts{1, 1, 3, 7, 4}},
		{"a\u0085b c\n", locale{utf8: true}, counts{1, 2, 6, 7, 4}},
		{"\xed\xa0\x80", locale{utf8: true}, counts{0, 0, 0, 3, 0}},
		{"\xf4\x90\x80\x80", locale{utf8: true}, counts{0, 0, 1, 4, 0}},
		{"\xfc\x84\x80\x80\x80\x80", locale{utf8: true}, counts{0, 0, 1, 6, 0}},
		{"\xf8\x87\xbf\xbf\xbf", locale{utf8: true}, counts{0, 0, 0, 5, 0}},
		{"\xe4\xb8", locale{utf8: true}, counts{0, 0, 0, 2, 0}},
	} {
		if got := refCount([]byte(tc.in), tc.loc); got != tc.want {
			t.Errorf("refCount(%q, %v) = %+v, want %+v", tc.in, tc.loc, got, tc.want)
		}
	}
}

// TestDecodeMatchesGlibc checks decode on the forms where glibc's UTF-8
// decoder and Go's differ, with the character counts GNU wc -m gave here.
func TestDecodeMatchesGlibc(t *testing.T) {
	for _, tc := range []struct {
		in   string
		size int
	}{
		{"A", 1},
		{"\xc2\x85", 2},
		{"\xef\xbf\xbd", 3},
		{"\xef\xbf\xbe", 3},
		{"\xf4\x8f\xbf\xbf", 4},
		{"\xf4\x90\x80\x80", 4},         // above U+10FFFF: glibc takes it
		{"\xf7\xbf\xbf\xbf", 4},         // likewise
		{"\xf8\x88\x80\x80\x80", 5},     // 5-byte form
		{"\xfc\x84\x80\x80\x80\x80", 6}, // 6-byte form
		{"\xfd\xbf\xbf\xbf\xbf\xbf", 6},
		{"\xed\xa0\x80", 0}, // surrogate
		{"\xc0\x80", 0},     // overlong
		{"\xe0\x80\x80", 0},
		{"\xf0\x80\x80\x80", 0},
		{"\xf8\x87\xbf\xbf\xbf", 0},
		{"\xfe", 0},
		{"\xff", 0},
		{"\x80", 0},
		{"\xe4\xb8A", 0},
		{"\xe4\xb8", -1},
		{"\xfc\x84\x80\x80\x80", -1},
	} {
		if _, size := decode([]byte(tc.in)); size != tc.size {
			t.Errorf("decode(%q) size = %d, want %d", tc.in, size, tc.size)
		}
	}
}

// TestWordLoopMatchesScan checks the C locale's branch-free word loop
// against the character loop on random bytes drawn from few classes.
func TestWordLoopMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \t\n\v\f\r\x00\x01\x7f\x80\xff")
	for n := 0; n < 2000; n++ {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		starts, first, in := countWords(b)
		var s summary
		scan(&s, b, locale{})
		if starts != s.starts || first != s.first || (first != firstNone && in != s.inWord) {
			t.Fatalf("%q: countWords = %d %d %v, scan = %d %d %v", b, starts, first, in, s.starts, s.first, s.inWord)
		}
	}
}

// TestLineFn checks the composition of tab stops across a block start:
// any prefix position p followed by the run must land where running the
// whole line from 0 lands.
func TestLineFn(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 2000; n++ {
		var f lineFn
		pos := int64(r.IntN(30))
		p := pos
		for range r.IntN(12) {
			if r.IntN(3) == 0 {
				f.doTab()
				p += 8 - p%8
			} else {
				w := int64(r.IntN(3))
				f.width(w)
				p += w
			}
		}
		if got := f.apply(pos); got != p {
			t.Fatalf("lineFn %+v applied to %d = %d, want %d", f, pos, got, p)
		}
	}
}

// FuzzSplit cuts data at offsets drawn from seed and checks, for every
// count and locale, that the combined block summaries equal one pass of
// refCount over the whole.
func FuzzSplit(f *testing.F) {
	for i, s := range corpus {
		f.Add([]byte(s), uint64(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 99))
		var cuts []int
		if len(data) > 0 {
			for i := 1; i < len(data); i++ {
				if r.IntN(4) == 0 {
					cuts = append(cuts, i)
				}
			}
		}
		for _, loc := range locales {
			full := refCount(data, loc)
			for _, w := range allWhats() {
				want := pick(full, w)
				if got := pick(splitCount(data, cuts, w, loc), w); got != want {
					t.Fatalf("%v -%v %q cut at %v: got %+v, want %+v", loc, w, data, cuts, got, want)
				}
			}
		}
	})
}

// TestCombineLargeRandom runs text-like random data through blocks of
// many sizes, the way Scan hands them over.
func TestCombineLargeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"word", " ", "\n", "\t", "é", "中", "\u00a0", "\u3000", "\xe4", "\x80", "\r\n", "\x00", "\U0001F600"}
	var buf bytes.Buffer
	for buf.Len() < 100_000 {
		buf.WriteString(pieces[r.IntN(len(pieces))])
	}
	b := buf.Bytes()
	for _, loc := range locales {
		full := refCount(b, loc)
		for _, bs := range []int{2, 3, 7, 64, 4093, 65536} {
			var cuts []int
			for o := bs; o < len(b); o += bs {
				cuts = append(cuts, o)
			}
			for _, w := range []what{{lines: true}, {words: true}, {chars: true}, {maxLine: true}, {true, true, true, true, true}} {
				name := fmt.Sprintf("%v/-%v/bs%d", loc, w, bs)
				if got, want := pick(splitCount(b, cuts, w, loc), w), pick(full, w); got != want {
					t.Errorf("%s: got %+v, want %+v", name, got, want)
				}
			}
		}
	}
}
