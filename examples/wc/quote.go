package main

import "strings"

// quote spells a file name the way GNU wc does in its messages (and in a
// count line when the name holds a newline): gnulib's quotef, that is the
// shell-escape quoting style with ':' also quoted. A name that needs
// nothing stays as it is; otherwise it is put in single quotes, with
// $'\n'-style escapes for characters that cannot be typed inside them;
// a name whose only problem is a single quote gets double quotes.
// printable says whether a character that is not ASCII can be shown
// as it is (in the C locale no byte above 0x7f can).
func quote(name string, loc locale) string {
	if name != "" && !needsQuotes(name, loc) {
		return name
	}
	return quoteAlways(name, loc)
}

// needsQuotes reports whether the shell-escape style must put quotes
// around name (gnulib's "force_outer_quoting_style" cases).
func needsQuotes(name string, loc locale) bool {
	for i := 0; i < len(name); {
		c := name[i]
		switch {
		case c == '{' || c == '}':
			if len(name) == 1 {
				return true
			}
		case c == '#' || c == '~':
			if i == 0 {
				return true
			}
		case strings.IndexByte(" !\"$&()*;<=>[^`|'?\\:", c) >= 0:
			return true
		case isSafe(c):
		default:
			n, ok := printableAt(name[i:], loc)
			if !ok {
				return true
			}
			i += n
			continue
		}
		i++
	}
	return false
}

// isSafe is gnulib's list of characters that never need quoting.
func isSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("%+,-./:]_", c) >= 0
}

// printableAt reports whether s begins with a printable character that
// needs no escape, and its length.
func printableAt(s string, loc locale) (int, bool) {
	c := s[0]
	if c < 0x80 {
		return 1, c >= 0x20 && c < 0x7f
	}
	if !loc.utf8 {
		return 1, false
	}
	r, size := decode([]byte(s[:min(len(s), maxSeq)]))
	if size <= 0 {
		return 1, false
	}
	k, _ := classify(r, locale{utf8: true})
	return size, k != cNone
}

// quoteAlways is the shell-escape-always style: 'name', with a quote
// written '\” and characters that are not printable as $'\NNN' (or
// $'\n' and the like) outside the quotes. When the name has a single
// quote and otherwise only characters that are safe in C string syntax
// too, gnulib writes it in double quotes instead.
func quoteAlways(name string, loc locale) string {
	var b strings.Builder
	b.WriteByte('\'')
	pending := false // inside a $'...' escape
	quoteSeen, allCompat := false, true
	endEsc := func() {
		if pending {
			b.WriteString("''")
			pending = false
		}
	}
	startEsc := func() {
		if !pending {
			b.WriteString("'$'")
			pending = true
		}
		b.WriteByte('\\')
	}
	for i := 0; i < len(name); {
		c := name[i]
		if esc := strings.IndexByte("\a\b\f\n\r\t\v", c); esc >= 0 {
			startEsc()
			b.WriteByte("abfnrtv"[esc])
			allCompat = false
			i++
			continue
		}
		if c == '\'' {
			// Closes any $'...' as well as the quotes.
			quoteSeen, pending = true, false
			b.WriteString(`'\''`)
			i++
			continue
		}
		n, ok := printableAt(name[i:], loc)
		if !ok {
			allCompat = false
			startEsc()
			b.WriteByte('0' + c>>6)
			b.WriteByte('0' + c>>3&7)
			b.WriteByte('0' + c&7)
			i++
			continue
		}
		if c < 0x80 && !(c == ' ' || c == '@' || isSafe(c) ||
			(c == '{' || c == '}') && len(name) == 1 ||
			(c == '#' || c == '~') && i == 0) {
			allCompat = false // not c_and_shell_quote_compat in gnulib
		}
		endEsc()
		b.WriteString(name[i : i+n])
		i += n
	}
	if quoteSeen && allCompat {
		return `"` + name + `"`
	}
	b.WriteByte('\'')
	return b.String()
}
