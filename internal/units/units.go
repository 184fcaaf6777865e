// Package units parses and formats what iopath's users write and read:
// byte sizes and rates (4k, 128KiB, 1GiB, 1.5g), comma-separated lists,
// and file names printed so that each stays on its line.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseSize parses a byte size. Suffixes are binary and case-insensitive:
// k/K/KB/KiB = 1024, m/MiB = 1024², g/GiB, t/TiB; a plain number is bytes.
// Fractions are allowed ("1.5GiB") when the result is a whole number of
// bytes. Negative sizes and sizes over 2^62 are errors.
func ParseSize(s string) (int64, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty size")
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, suf := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	if num == "" {
		return 0, fmt.Errorf("size %q: want a number with an optional unit, like 4k or 1GiB", orig)
	}
	var mult float64
	switch suf {
	case "", "b":
		mult = 1
	case "k", "kb", "kib":
		mult = 1 << 10
	case "m", "mb", "mib":
		mult = 1 << 20
	case "g", "gb", "gib":
		mult = 1 << 30
	case "t", "tb", "tib":
		mult = 1 << 40
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q (use k, MiB, GiB, TiB)", orig, s[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) {
		return 0, fmt.Errorf("size %q: not a number", orig)
	}
	v := f * mult
	if v > 1<<62 {
		return 0, fmt.Errorf("size %q: too large", orig)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q: not a whole number of bytes", orig)
	}
	return int64(v), nil
}

// FormatSize formats n bytes with the largest binary unit that divides it
// exactly, or with two decimals of the largest unit below it.
func FormatSize(n int64) string {
	units := []struct {
		s string
		v int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	for _, u := range units {
		if n >= u.v {
			return fmt.Sprintf("%.2f%s", float64(n)/float64(u.v), u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// ParseList splits a comma-separated flag value into its items, trimming
// spaces around each. An empty item ("4k,,8k", a comma at either end) or an
// empty value is an error: it is a slip more often than not, and dropping
// it silently would run something other than what was written.
func ParseList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty list")
	}
	parts := strings.Split(s, ",")
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		if p = strings.TrimSpace(p); p == "" {
			return nil, fmt.Errorf("item %d of %d is empty", i+1, len(parts))
		}
		out = append(out, p)
	}
	return out, nil
}

// RoughSize formats n bytes for reading, not parsing back: the largest
// binary unit it reaches, with one decimal unless the unit divides it.
func RoughSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v {
			if n%u.v == 0 {
				return fmt.Sprintf("%d%s", n/u.v, u.s)
			}
			return fmt.Sprintf("%.1f%s", float64(n)/float64(u.v), u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// QuotePath returns p as it is when every character of it prints as
// itself, else Go-quoted ("a\nb", "\x1b[31m"), as ls and %q do: a name
// with a newline, an escape byte, a bidirectional override or bytes that
// are not UTF-8 must not split a line of output in two or drive the
// terminal.
func QuotePath(p string) string {
	if printable(p) {
		return p
	}
	return strconv.Quote(p)
}

// EscapeControls returns s with each character that does not print as
// itself written as Go writes it inside a quoted string (\n, \x1b,
// \u202e), for text in which a name is one part among words, such as an
// error message: the text stays one line and inert on a terminal.
func EscapeControls(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == ' ' || (strconv.IsPrint(r) && !(r == utf8.RuneError && n == 1)) {
			b.WriteString(s[i : i+n])
		} else {
			q := strconv.Quote(s[i : i+n]) // one character, or one bad byte
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// OneLine is s on one line: its runs of white space one space, its other
// control characters escaped (EscapeControls), for text quoted in an
// error message or a table cell.
func OneLine(s string) string { return EscapeControls(strings.Join(strings.Fields(s), " ")) }

// printable says whether every character of s prints as itself: valid
// UTF-8, and graphic or the ASCII space.
func printable(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !strconv.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}
