package main

import (
	"bytes"
	"encoding/binary"
	"sort"
)

// what says which counts to compute and print, in GNU wc's order:
// lines, words, chars, bytes, max line length.
type what struct {
	lines, words, chars, bytes, maxLine bool
}

// n is how many counts are asked for.
func (w what) n() int {
	n := 0
	for _, b := range [...]bool{w.lines, w.words, w.chars, w.bytes, w.maxLine} {
		if b {
			n++
		}
	}
	return n
}

// locale is the part of the C library's locale that changes what GNU wc
// counts: whether characters are UTF-8 (else every byte is a character,
// as in the C locale), and whether POSIXLY_CORRECT is set (then the
// non-breaking spaces are not word separators).
type locale struct {
	utf8  bool
	posix bool
}

// counts is what wc prints for one file, or for the total.
type counts struct {
	lines, words, chars, bytes, maxLine int64
}

func (c *counts) add(o counts) {
	c.lines += o.lines
	c.words += o.words
	c.chars += o.chars
	c.bytes += o.bytes
	c.maxLine = max(c.maxLine, o.maxLine)
}

// Byte classes, after GNU wc's loop over a buffer (src/wc.c): what one
// byte does to the line, word and line-length counts. In the C locale
// every byte is a character; in a UTF-8 locale bytes below 0x80 are.
const (
	cNone  = iota // not printable (controls, DEL, 0x80-0xff): changes nothing
	cWord         // printable, not a space: width 1, part of a word
	cSpace        // ' ': width 1, ends a word
	cVT           // '\v': ends a word, no width
	cTab          // '\t': to the next multiple of 8, ends a word
	cNL           // '\n': a line, a line end, ends a word
	cCR           // '\r' and '\f': a line end (for -L), ends a word
)

// cClass is the class of each byte in the C locale (isprint is 0x20-0x7e).
var cClass = func() (t [256]uint8) {
	for c := 0x21; c <= 0x7e; c++ {
		t[c] = cWord
	}
	t[' '] = cSpace
	t['\v'] = cVT
	t['\t'] = cTab
	t['\n'] = cNL
	t['\r'] = cCR
	t['\f'] = cCR
	return t
}()

// wordBits packs cClass for the word loop: bit 0 is set for a byte that
// is part of a word, bit 1 for one that changes nothing (so the state
// before it carries over); a byte with neither bit ends a word.
var wordBits = func() (t [256]uint8) {
	for c, k := range cClass {
		switch k {
		case cWord:
			t[c] = 1
		case cNone:
			t[c] = 2
		}
	}
	return t
}()

// What a block's first character that matters to words is.
const (
	firstNone  = iota // none: the block is all bytes that change nothing
	firstSpace        // a separator
	firstWord         // part of a word
)

// lineFn is what a run of characters without a line end does to the
// display position: p -> p+a without a tab; with one, the first tab
// rounds p+a up to the next multiple of 8 and what follows adds b (later
// tabs depend only on b, since the first left a multiple of 8).
type lineFn struct {
	tab  bool
	a, b int64
}

func (f *lineFn) width(w int64) {
	if f.tab {
		f.b += w
	} else {
		f.a += w
	}
}

func (f *lineFn) doTab() {
	if f.tab {
		f.b = (f.b/8 + 1) * 8
	} else {
		f.tab = true
	}
}

func (f lineFn) apply(p int64) int64 {
	if !f.tab {
		return p + f.a
	}
	return ((p+f.a)/8+1)*8 + f.b
}

// maxSeq is the longest character glibc's UTF-8 decoder takes (6 bytes:
// it accepts code points up to 0x7fffffff).
const maxSeq = 6

// summary is what one block contributes, computed without knowing what
// came before it, so that blocks can be counted in any order, on any
// goroutine, and combined in file order afterwards (combiner). Words are
// counted as word starts, assuming the block begins outside a word; the
// combiner takes one off when the block's first word continues the
// previous block's last one.
type summary struct {
	n      int64 // bytes
	lines  int64
	starts int64 // words begun in the block, if it began outside a word
	first  uint8 // firstNone, firstSpace or firstWord
	inWord bool  // inside a word at the end (when first != firstNone)

	// -L: the display position before the first line end is lead applied
	// to the incoming position; after it, positions are known.
	ends     bool   // the block has a line end (\n, \r, \f)
	lead     lineFn // from the block's start to its first line end
	maxInner int64  // largest position at the block's other line ends
	pos      int64  // position at the end, after the last line end

	// -m in a UTF-8 locale: characters that begin in this block and end
	// in it. A character begun in the previous block ends in head; one
	// begun at the end of this block (tail) ends in the next.
	chars int64
	head  [maxSeq - 1]byte
	nhead uint8
	tail  [maxSeq - 1]byte
	ntail uint8
}

// summarize counts one block. Lines alone need only a newline count;
// words in the C locale a table walk (countWords); in a UTF-8 locale runs
// of ASCII take the same walk and the other bytes are decoded (scanUTF8);
// -L needs the character-by-character loop (scan).
func summarize(b []byte, w what, loc locale) summary {
	s := summary{n: int64(len(b))}
	multibyte := loc.utf8 && (w.words || w.chars || w.maxLine)
	if !multibyte && !w.maxLine {
		if w.lines {
			s.lines = int64(bytes.Count(b, nl))
		}
		if w.words {
			s.starts, s.first, s.inWord = countWords(b)
		}
		return s
	}
	s.nhead = uint8(copy(s.head[:], b))
	if w.maxLine {
		scan(&s, b, loc)
	} else {
		scanUTF8(&s, b, loc)
	}
	return s
}

var nl = []byte{'\n'}

// countWords is GNU wc's word rule in the C locale (a word is a run of
// printable non-space bytes; bytes that are not printable neither start
// nor end one) as a branch-free loop: it counts bytes that are part of a
// word and come when the state is outside one.
func countWords(b []byte) (starts int64, first uint8, inWord bool) {
	return wordRun(b, false)
}

// wordRun is countWords for bytes that come with the state inWord
// (bytes below 0x80 in a UTF-8 locale, or any in the C locale). first is
// the class of the first byte that is not transparent; when there is
// none, the state goes out as it came in.
func wordRun(b []byte, inWord bool) (starts int64, first uint8, out bool) {
	i := 0
	for i < len(b) && wordBits[b[i]]&2 != 0 {
		i++
	}
	if i == len(b) {
		return 0, firstNone, inWord
	}
	first = firstSpace
	if wordBits[b[i]]&1 != 0 {
		first = firstWord
	}
	var prev, n uint64
	if inWord {
		prev = 1
	}
	for _, c := range b[i:] {
		x := uint64(wordBits[c])
		in := x & 1
		n += in &^ prev
		prev = in | (x >> 1 & prev)
	}
	return int64(n), first, prev != 0
}

// asciiLen is the length of b's longest prefix of bytes below 0x80.
func asciiLen(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			break
		}
	}
	for i < len(b) && b[i] < 0x80 {
		i++
	}
	return i
}

// scanUTF8 is scan for lines, words and characters without -L in a UTF-8
// locale, faster on mostly-ASCII text: runs of ASCII go through the
// C locale's word loop (their classes are the same), and only the bytes
// from 0x80 up are decoded one by one.
func scanUTF8(s *summary, b []byte, loc locale) {
	s.lines = int64(bytes.Count(b, nl)) // '\n' is never part of a longer character
	inWord := false
	for i := 0; i < len(b); {
		if j := i + asciiLen(b[i:]); j > i {
			n, first, out := wordRun(b[i:j], inWord)
			s.starts += n
			if s.first == firstNone {
				s.first = first
			}
			inWord = out
			s.chars += int64(j - i)
			i = j
			continue
		}
		r, size := decode(b[i:])
		switch {
		case size < 0: // cut off by the end of the block
			s.ntail = uint8(copy(s.tail[:], b[i:]))
			i = len(b)
			continue
		case size == 0: // not the start of a character
			i++
			continue
		}
		i += size
		s.chars++
		switch k, _ := classify(r, loc); k {
		case cWord:
			if s.first == firstNone {
				s.first = firstWord
			}
			if !inWord {
				s.starts++
				inWord = true
			}
		case cSpace:
			if s.first == firstNone {
				s.first = firstSpace
			}
			inWord = false
		}
	}
	s.inWord = inWord
}

// scan is the character-by-character loop, the one GNU wc runs for -w,
// -m and -L in a multibyte locale, or -L in any: each character does
// what its class says to the word state, the lines and the display
// position. In a UTF-8 locale a byte that does not begin a valid
// character is skipped (it changes nothing and is not a character), and
// a character cut off by the block's end is left in tail for the
// combiner.
func scan(s *summary, b []byte, loc locale) {
	inWord := false
	for i := 0; i < len(b); {
		c := b[i]
		var k uint8
		var width int64
		if c < 0x80 || !loc.utf8 {
			k = cClass[c]
			width = 1
			i++
			if loc.utf8 {
				s.chars++
			}
		} else {
			r, size := decode(b[i:])
			switch {
			case size < 0: // cut off by the end of the block
				s.ntail = uint8(copy(s.tail[:], b[i:]))
				i = len(b)
				continue
			case size == 0: // not the start of a character
				i++
				continue
			}
			i += size
			s.chars++
			k, width = classify(r, loc)
		}
		switch k {
		case cNone:
			continue
		case cWord:
			if s.first == firstNone {
				s.first = firstWord
			}
			if !inWord {
				s.starts++
				inWord = true
			}
			s.width(width)
			continue
		case cSpace:
			s.width(width)
		case cTab:
			if s.ends {
				s.pos += 8 - s.pos%8
			} else {
				s.lead.doTab()
			}
		case cNL, cCR:
			if k == cNL {
				s.lines++
			}
			if s.ends {
				s.maxInner = max(s.maxInner, s.pos)
			}
			s.ends = true
			s.pos = 0
		}
		// Every class left here ends a word.
		if s.first == firstNone {
			s.first = firstSpace
		}
		inWord = false
	}
	s.inWord = inWord
}

func (s *summary) width(w int64) {
	if s.ends {
		s.pos += w
	} else {
		s.lead.width(w)
	}
}

// decode reads one character the way glibc's UTF-8 mbrtowc does, which
// differs from Go's utf8.DecodeRune: it takes 5- and 6-byte forms and
// code points above U+10FFFF (up to 0x7fffffff), and, like Go, refuses
// overlong forms and surrogates. size is the character's length, 0 when
// b does not begin with a valid character, and -1 when b is the valid
// beginning of a longer one.
func decode(b []byte) (r rune, size int) {
	c := b[0]
	var n int
	var min rune
	switch {
	case c < 0x80:
		return rune(c), 1
	case c < 0xc2:
		return 0, 0
	case c < 0xe0:
		n, min, r = 2, 0x80, rune(c&0x1f)
	case c < 0xf0:
		n, min, r = 3, 0x800, rune(c&0x0f)
	case c < 0xf8:
		n, min, r = 4, 0x10000, rune(c&0x07)
	case c < 0xfc:
		n, min, r = 5, 0x200000, rune(c&0x03)
	case c < 0xfe:
		n, min, r = 6, 0x4000000, rune(c&0x01)
	default:
		return 0, 0
	}
	for i := 1; i < n; i++ {
		if i == len(b) {
			return 0, -1
		}
		if b[i]&0xc0 != 0x80 {
			return 0, 0
		}
		r = r<<6 | rune(b[i]&0x3f)
	}
	if r < min || (r >= 0xd800 && r <= 0xdfff) {
		return 0, 0
	}
	return r, n
}

// seqLen is the length of the character that lead byte c begins, as
// decode sees it.
func seqLen(c byte) int {
	switch {
	case c < 0xe0:
		return 2
	case c < 0xf0:
		return 3
	case c < 0xf8:
		return 4
	case c < 0xfc:
		return 5
	}
	return 6
}

// Kinds of characters from U+0080 up, in utf8Ranges.
const (
	kindSpace = 1
	kindWord  = 2
)

// charRange is a run of code points that GNU wc treats alike.
type charRange struct {
	lo, hi      uint32
	kind, width uint8
}

// classify is the class and width GNU wc gives code point r >= 0x80 in a
// UTF-8 locale. With POSIXLY_CORRECT set, GNU wc does not take the
// non-breaking spaces as word separators.
func classify(r rune, loc locale) (uint8, int64) {
	ranges := utf8Ranges[:]
	i := sort.Search(len(ranges), func(i int) bool { return ranges[i].hi >= uint32(r) })
	if i == len(ranges) || ranges[i].lo > uint32(r) {
		return cNone, 0
	}
	g := ranges[i]
	if g.kind == kindWord || (loc.posix && isNBSP(r)) {
		return cWord, int64(g.width)
	}
	return cSpace, int64(g.width)
}

func isNBSP(r rune) bool { return r == 0xa0 || r == 0x2007 || r == 0x202f || r == 0x2060 }

// combiner adds block summaries up in file order.
type combiner struct {
	w      what
	loc    locale
	c      counts
	inWord bool
	pos    int64
	carry  [maxSeq]byte // a character begun in earlier blocks, unfinished
	ncarry int
}

func newCombiner(w what, loc locale) *combiner { return &combiner{w: w, loc: loc} }

// add takes the summary of the block that follows the ones added so far.
func (m *combiner) add(s *summary) {
	keep := false // the carried character is still unfinished after s
	if m.ncarry > 0 {
		keep = m.resolve(s)
	}
	m.c.bytes += s.n
	m.c.lines += s.lines
	m.c.chars += s.chars
	if s.first != firstNone {
		m.c.words += s.starts
		if m.inWord && s.first == firstWord {
			m.c.words--
		}
		m.inWord = s.inWord
	}
	if s.ends {
		m.c.maxLine = max(m.c.maxLine, s.lead.apply(m.pos), s.maxInner)
		m.pos = s.pos
	} else {
		m.pos = s.lead.apply(m.pos)
	}
	if !keep && s.ntail > 0 {
		m.ncarry = copy(m.carry[:], s.tail[:s.ntail])
	}
}

// resolve finishes the carried character with the first bytes of s: it
// is one character more (and, for words and -L, an event between the
// previous block and s) if it is valid, nothing if not. It reports
// whether s was too short to finish it.
func (m *combiner) resolve(s *summary) (keep bool) {
	need := seqLen(m.carry[0]) - m.ncarry
	take := min(need, int(s.nhead))
	n := m.ncarry + copy(m.carry[m.ncarry:], s.head[:take])
	r, size := decode(m.carry[:n])
	if size < 0 {
		// s is all continuation bytes, fewer than the character needs.
		m.ncarry = n
		return true
	}
	m.ncarry = 0
	if size == 0 {
		return false
	}
	m.c.chars++
	k, width := classify(r, m.loc)
	switch k {
	case cWord:
		if !m.inWord {
			m.c.words++
		}
		m.inWord = true
		m.pos += width
	case cSpace:
		m.inWord = false
		m.pos += width
	}
	return false
}

// result is the counts of everything added; the unfinished character a
// file may end with is not a character, as for GNU wc.
func (m *combiner) result() counts {
	c := m.c
	c.maxLine = max(c.maxLine, m.pos)
	if !m.loc.utf8 || !(m.w.chars || m.w.words || m.w.maxLine) {
		c.chars = c.bytes
	}
	return c
}

// countAll counts b as one whole file.
func countAll(b []byte, w what, loc locale) counts {
	s := summarize(b, w, loc)
	m := newCombiner(w, loc)
	m.add(&s)
	return m.result()
}
