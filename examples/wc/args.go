package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// options is what the command line asks for.
type options struct {
	w        what
	operands []string
}

// longOptions are GNU wc's long options that this wc has, with the short
// option each stands for ('h' and 'v' for --help and --version).
var longOptions = []struct {
	name  string
	short byte
}{
	{"bytes", 'c'},
	{"chars", 'm'},
	{"lines", 'l'},
	{"words", 'w'},
	{"max-line-length", 'L'},
	{"help", 'h'},
	{"version", 'v'},
}

// parseArgs reads the command line as GNU getopt_long does for wc:
// options and operands in any order (operands first only with
// POSIXLY_CORRECT set), short options bundled (-lw), long ones
// abbreviated to any unambiguous prefix, "--" ending the options, "-"
// an operand. done is true when nothing is to be counted: --help,
// --version, or a usage error (already printed; status 1).
func parseArgs(args []string, posix bool, stdout, stderr io.Writer) (o options, status int, done bool) {
	usage := func(format string, a ...any) (options, int, bool) {
		fmt.Fprintf(stderr, "wc: "+format+"\n", a...)
		fmt.Fprintln(stderr, "Try 'wc --help' for more information.")
		return o, 1, true
	}
	set := func(c byte) (int, bool) {
		switch c {
		case 'c':
			o.w.bytes = true
		case 'm':
			o.w.chars = true
		case 'l':
			o.w.lines = true
		case 'w':
			o.w.words = true
		case 'L':
			o.w.maxLine = true
		case 'h':
			io.WriteString(stdout, helpText)
			return 0, true
		case 'v':
			io.WriteString(stdout, versionText)
			return 0, true
		}
		return 0, false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			o.operands = append(o.operands, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a[2:], "=")
			var matches []int
			for j, lo := range longOptions {
				if lo.name == name {
					matches = []int{j}
					break
				}
				if strings.HasPrefix(lo.name, name) {
					matches = append(matches, j)
				}
			}
			switch {
			case len(matches) == 0:
				return usage("unrecognized option '%s'", a)
			case len(matches) > 1:
				var b strings.Builder
				for _, j := range matches {
					fmt.Fprintf(&b, " '--%s'", longOptions[j].name)
				}
				return usage("option '%s' is ambiguous; possibilities:%s", a, b.String())
			}
			lo := longOptions[matches[0]]
			if hasValue {
				return usage("option '--%s' doesn't allow an argument", lo.name)
			}
			if st, stop := set(lo.short); stop {
				return o, st, true
			}
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				if strings.IndexByte("cmlwL", a[k]) < 0 {
					return usage("invalid option -- '%c'", a[k])
				}
				set(a[k])
			}
		default:
			o.operands = append(o.operands, a)
			if posix {
				o.operands = append(o.operands, args[i+1:]...)
				i = len(args)
			}
		}
	}
	if o.w == (what{}) {
		o.w = what{lines: true, words: true, bytes: true}
	}
	return o, 0, false
}

const helpText = `Usage: wc [OPTION]... [FILE|DIR]...
Print newline, word, and byte counts for each FILE, and a total line if
more than one FILE is specified.  A word is a non-zero-length sequence of
printable characters delimited by white space.

With no FILE, or when FILE is -, read standard input.

A DIR is walked: each file in it, and in its subdirectories, is counted
and printed on its own line, in lexical order, as if it had been named.
(GNU wc instead says "Is a directory" and counts 0.)

The options below may be used to select which counts are printed, always in
the following order: newline, word, character, byte, maximum line length.
  -c, --bytes            print the byte counts
  -m, --chars            print the character counts
  -l, --lines            print the newline counts
  -L, --max-line-length  print the maximum display width
  -w, --words            print the word counts
      --help     display this help and exit
      --version  output version information and exit

Words, characters and widths follow GNU wc 9.1 in the C locale and, with
LC_ALL, LC_CTYPE or LANG naming a UTF-8 locale, in glibc's UTF-8 locales.
This wc reads large files on several cores at once (iopath.Scan) and many
files with iopath.ReadFiles; see examples/wc/README.md.
`

const versionText = `wc (iopath example) 1.0
Counts as GNU coreutils wc 9.1 does; UTF-8 character classes from glibc ` + glibcVersion + `.
`

// localeFrom is whether the locale the C library would pick for
// character types (LC_ALL, else LC_CTYPE, else LANG) uses UTF-8. As in
// glibc, a locale that is not installed counts as the C locale: it must
// be C.UTF-8 or found under /usr/lib/locale (a locale-archive there is
// taken to hold it, unchecked).
func localeFrom(getenv env) locale {
	var name string
	for _, v := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if s, _ := getenv(v); s != "" {
			name = s
			break
		}
	}
	lang, rest, ok := strings.Cut(name, ".")
	if !ok {
		return locale{}
	}
	codeset, modifier, _ := strings.Cut(rest, "@")
	if normCodeset(codeset) != "utf8" {
		return locale{}
	}
	if lang == "C" || lang == "POSIX" {
		return locale{utf8: true}
	}
	if modifier != "" {
		modifier = "@" + modifier
	}
	for _, p := range []string{name, lang + ".utf8" + modifier, "locale-archive"} {
		if _, err := os.Stat("/usr/lib/locale/" + p); err == nil {
			return locale{utf8: true}
		}
	}
	return locale{}
}

// normCodeset is glibc's _nl_normalize_codeset: letters lower-cased,
// digits kept, everything else dropped ("UTF-8" -> "utf8").
func normCodeset(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteByte(c)
		}
	}
	return b.String()
}
