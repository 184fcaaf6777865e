package units

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"512", 512, false},
		{"512b", 512, false},
		{"4k", 4096, false},
		{"4K", 4096, false},
		{"4KB", 4096, false},
		{"128KiB", 128 << 10, false},
		{"1m", 1 << 20, false},
		{"1MiB", 1 << 20, false},
		{"1GiB", 1 << 30, false},
		{"1.5g", 3 << 29, false},
		{"2t", 2 << 40, false},
		{" 8 GiB ", 8 << 30, false},
		{"0.5k", 512, false},
		{"", 0, true},
		{"k", 0, true},
		{"-1", 0, true},
		{"1.1", 0, true},
		{"1x", 0, true},
		{"1..2k", 0, true},
		{"9999999t", 0, true},
		{"1e3", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSize(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0B", 1: "1B", 1023: "1023B", 1024: "1KiB", 4096: "4KiB", 1 << 20: "1MiB",
		1<<20 + 1: "1.00MiB", 3 << 29: "1536MiB", 5 << 40: "5TiB",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseList(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // items joined by |; "" for an error
	}{
		{"a", "a"},
		{" a, b ,c ", "a|b|c"},
		{"4k,16k", "4k|16k"},
		{"4k,,8k", ""},
		{"4k,", ""},
		{",4k", ""},
		{"a, ,b", ""},
		{"", ""},
		{" ", ""},
		{",", ""},
	} {
		got, err := ParseList(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseList(%q) = %q, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != tt.want {
			t.Errorf("ParseList(%q) = %q, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseList(f *testing.F) {
	for _, s := range []string{"4k,16k", "a,,b", "", ",", " a , b "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		items, err := ParseList(s)
		if err != nil {
			return
		}
		// Every comma separates two items, none of them empty.
		if len(items) != strings.Count(s, ",")+1 {
			t.Fatalf("ParseList(%q) = %q: %d items for %d commas", s, items, len(items), strings.Count(s, ","))
		}
		for _, it := range items {
			if it == "" || it != strings.TrimSpace(it) {
				t.Fatalf("ParseList(%q) has item %q", s, it)
			}
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4k", "128KiB", "1GiB", "1.5g", "0", "", "-1", "1e9", "12345678901234567890t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 || n > 1<<62 {
			t.Fatalf("ParseSize(%q) = %d, out of range", s, n)
		}
		// A value FormatSize writes in whole units must parse back.
		out := FormatSize(n)
		if strings.Contains(out, ".") {
			return
		}
		back, err := ParseSize(out)
		if err != nil || back != n {
			t.Fatalf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, out, back, err)
		}
	})
}

func TestQuotePath(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/var/tmp/data", "/var/tmp/data"},
		{"a b/ü.dat", "a b/ü.dat"},
		{"a\nb", `"a\nb"`},
		{"\x1b[31mred", `"\x1b[31mred"`},
		{"tab\there", `"tab\there"`},
		{"del\x7f", `"del\x7f"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{"rtl\u202eoverride", `"rtl\u202eoverride"`},
		{"c1\u0085", `"c1\u0085"`},
	} {
		if got := QuotePath(tt.in); got != tt.want {
			t.Errorf("QuotePath(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestEscapeControls(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"open /x: no such file", "open /x: no such file"},
		{"open /a\nb: no such file", `open /a\nb: no such file`},
		{"open /\x1b[31m: denied", `open /\x1b[31m: denied`},
		{"bad \xff byte, ü kept", `bad \xff byte, ü kept`},
	} {
		if got := EscapeControls(tt.in); got != tt.want {
			t.Errorf("EscapeControls(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func FuzzQuotePath(f *testing.F) {
	for _, s := range []string{"/a/b", "a\nb", "\x1b", "\xff", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{QuotePath(s), EscapeControls(s)} {
			if !printable(out) {
				t.Fatalf("%q gave %q, which does not print as itself", s, out)
			}
		}
		if q := QuotePath(s); q != s {
			if back, err := strconv.Unquote(q); err != nil || back != s {
				t.Fatalf("QuotePath(%q) = %s does not unquote back: %q, %v", s, q, back, err)
			}
		}
	})
}
