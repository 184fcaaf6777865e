package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/internal/testenv"
)

// TestMain lets the test binary be wc itself (for TestBinary), and checks
// that no test leaves a goroutine behind.
func TestMain(m *testing.M) {
	testenv.NoMachineProfile()
	testenv.NoRaceExitSleep()
	if os.Getenv("IOPATH_WC_TEST_MAIN") == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// gnuWC is the path of GNU wc, or the test is skipped: every comparison
// here is with the real program.
func gnuWC(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("wc")
	if err != nil {
		t.Skip("GNU wc is not on PATH: nothing to compare with (install coreutils)")
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil || !bytes.Contains(out, []byte("GNU coreutils")) {
		t.Skipf("wc on PATH (%s) is not GNU coreutils wc: %q", p, out)
	}
	return p
}

// result is what one run of a wc printed.
type result struct {
	stdout, stderr string
	status         int
}

// runGNU runs GNU wc with args in the environment vars (and no other
// locale variable), stdin given (nil: none).
func runGNU(t *testing.T, gnu string, vars []string, stdin []byte, args ...string) result {
	t.Helper()
	cmd := exec.Command(gnu, args...)
	cmd.Args[0] = "wc"
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, vars...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run GNU wc: %v", err)
	}
	return result{out.String(), errb.String(), status}
}

// runOurs runs our wc in this process with the same environment; stdin
// is a pipe fed with the bytes given (nil: an empty one), as exec gives
// GNU wc.
func runOurs(t *testing.T, vars []string, stdin []byte, args ...string) result {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Write(stdin)
		w.Close()
	}()
	defer func() {
		r.Close()
		<-done
	}()
	return runOursFrom(t, vars, r, args...)
}

func runOursFrom(t *testing.T, vars []string, stdin *os.File, args ...string) result {
	t.Helper()
	envm := map[string]string{}
	for _, v := range vars {
		k, val, _ := strings.Cut(v, "=")
		envm[k] = val
	}
	lookup := func(k string) (string, bool) { v, ok := envm[k]; return v, ok }
	var out, errb bytes.Buffer
	status := run(context.Background(), args, stdin, &out, &errb, lookup)
	return result{out.String(), errb.String(), status}
}

// same runs both wcs and fails the test on any difference.
func same(t *testing.T, gnu string, vars []string, stdin []byte, args ...string) {
	t.Helper()
	want := runGNU(t, gnu, vars, stdin, args...)
	got := runOurs(t, vars, stdin, args...)
	if got != want {
		t.Errorf("%v wc %q:\nours: status %d\n%s%s\nGNU:  status %d\n%s%s", vars, args,
			got.status, got.stdout, got.stderr, want.status, want.stdout, want.stderr)
	}
}

// corpus files, made in a temporary directory.
type testCorpus struct {
	dir   string
	files []string // absolute paths
	big   string   // a file of several MiB: Scan's path, many blocks
}

var (
	cLocale    = []string{"LC_ALL=C"}
	utf8Locale = []string{"LC_ALL=C.UTF-8"}
)

func makeCorpus(t *testing.T) *testCorpus {
	t.Helper()
	dir := t.TempDir()
	c := &testCorpus{dir: dir}
	add := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	all := make([]byte, 0, 256*3)
	for range 3 {
		for b := range 256 {
			all = append(all, byte(b))
		}
	}
	for i, s := range corpus {
		add(fmt.Sprintf("corpus%02d", i), []byte(s))
	}
	named := map[string]string{
		"empty":     "",
		"nonl":      "no trailing newline",
		"onlynl":    "\n\n\n\n",
		"crlf":      "one\r\ntwo three\r\n\r\nfour\r\n",
		"tabs":      "\ta\tbb\tccc\tdddd\teeeee\n1234567\t\n12345678\t|\n\t\t\t\n",
		"long":      strings.Repeat("word\t", 20000) + "\n" + strings.Repeat("y", 100000),
		"binary":    string(all),
		"ws":        "\t\n\v\f\r a\tb\nc\vd\fe\rf g \v\f\r\t",
		"utf8":      "Grüße, 世界! Ünïcödé ñ\n日本語のテキスト\tと 한국어\n😀 emoji 👍🏽 e\u0301\n\u00a0nbsp\u00a0\u2007x\u202fy\u2060z\n\u3000ideo\u3000\u1680ogham\u2028ls\u2029ps\n\u200bzw\u200dj\n",
		"badutf8":   "ok \xff\xfe \xc3 \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80\n\x80\x81word\xbf\n",
		"controls":  "\x00\x01\x02 a\x1bb \x7f \x85\x9f\n",
		"cjk-width": "\u4e2d\u6587\t\uff21\uff22\t\u0301x\n",
	}
	names := make([]string, 0, len(named))
	for n := range named {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c.files = append(c.files, add(n, []byte(named[n])))
	}
	// Several MiB of text-like bytes with multibyte characters and
	// invalid bytes, so that Scan cuts lines, words and characters at
	// its block boundaries.
	r := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"word", "w", " ", "  ", "\n", "\t", "é", "中文", "\u00a0", "\u3000", "\xe4", "\x80", "\r\n", "\x00", "😀", "\v", "\f", strings.Repeat("z", 3000)}
	var big bytes.Buffer
	for big.Len() < bigFile+3<<20+12345 {
		big.WriteString(pieces[r.IntN(len(pieces))])
	}
	c.big = add("big", big.Bytes())
	return c
}

// flagSets is every combination of -l -w -m -c -L, bundled in one
// argument, plus the default (none).
func flagSets() [][]string {
	sets := [][]string{nil}
	for _, w := range allWhats() {
		sets = append(sets, []string{"-" + w.String()})
	}
	return sets
}

// TestMatchesGNU compares our output, byte for byte, with GNU wc's on the
// corpus: every flag combination, all the small files at once (a total
// line), each file alone (the one-file widths), in the C and UTF-8
// locales.
func TestMatchesGNU(t *testing.T) {
	gnu := gnuWC(t)
	c := makeCorpus(t)
	var small []string
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if p := filepath.Join(c.dir, e.Name()); p != c.big {
			small = append(small, p)
		}
	}
	for _, vars := range [][]string{cLocale, utf8Locale} {
		for _, flags := range flagSets() {
			same(t, gnu, vars, nil, append(slices.Clone(flags), small...)...)
		}
		for _, f := range append(small, c.big) {
			for _, flags := range [][]string{nil, {"-l"}, {"-w"}, {"-m"}, {"-L"}, {"-wmL"}} {
				same(t, gnu, vars, nil, append(slices.Clone(flags), f)...)
			}
		}
		for _, flags := range [][]string{{"-c"}, {"-lc"}, {"-lwmcL"}} {
			same(t, gnu, vars, nil, append(slices.Clone(flags), c.big, c.files[0], c.big)...)
		}
	}
}

// TestMatchesGNUOtherLocales covers the locale variables: LANG and
// LC_CTYPE as well as LC_ALL, a UTF-8 locale that is not installed (the C
// library falls back to C), and POSIXLY_CORRECT, which makes GNU wc stop
// taking non-breaking spaces for separators (and stops option parsing at
// the first operand).
func TestMatchesGNUOtherLocales(t *testing.T) {
	gnu := gnuWC(t)
	c := makeCorpus(t)
	for _, vars := range [][]string{
		{"LANG=C.UTF-8"},
		{"LC_CTYPE=C.UTF-8", "LANG=C"},
		{"LC_ALL=C", "LANG=C.UTF-8"},
		{"LANG=C.utf8"},
		{"LANG=xx_YY.UTF-8"},
		{"LC_ALL=C.UTF-8", "POSIXLY_CORRECT=1"},
		{"LC_ALL=C.UTF-8", "POSIXLY_CORRECT="},
		{},
	} {
		same(t, gnu, vars, nil, append([]string{"-lwmcL"}, c.files...)...)
		same(t, gnu, vars, nil, c.files[0], "-l")
	}
}

// TestStdinMatchesGNU reads standard input: a pipe (width 7 unless there
// is one count), "-" as an operand, "-" twice (the second read finds the
// end), and a regular file as standard input (its size gives the width).
func TestStdinMatchesGNU(t *testing.T) {
	gnu := gnuWC(t)
	c := makeCorpus(t)
	data, err := os.ReadFile(filepath.Join(c.dir, "utf8"))
	if err != nil {
		t.Fatal(err)
	}
	for _, vars := range [][]string{cLocale, utf8Locale} {
		for _, args := range [][]string{nil, {"-l"}, {"-w"}, {"-lc"}, {"-"}, {"-L", "-"}, {"-", "-"}, {"-m", c.files[0], "-"}} {
			same(t, gnu, vars, data, args...)
			same(t, gnu, vars, []byte{}, args...)
		}
	}
	// A regular file as standard input.
	for _, args := range [][]string{nil, {"-l"}, {"-"}, {c.files[1], "-"}} {
		f, err := os.Open(c.big)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(gnu, args...)
		cmd.Args[0] = "wc"
		cmd.Env = cLocale
		cmd.Stdin = f
		want, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		got := runOursFrom(t, cLocale, f, args...)
		f.Close()
		if got.stdout != string(want) || got.status != 0 {
			t.Errorf("wc %q < file: ours %q (status %d), GNU %q", args, got.stdout, got.status, want)
		}
	}
}

// TestErrorsMatchGNU checks messages and statuses: a missing file among
// others (the others still counted), names GNU quotes, bad options.
func TestErrorsMatchGNU(t *testing.T) {
	gnu := gnuWC(t)
	c := makeCorpus(t)
	odd := t.TempDir()
	var oddNames []string
	for _, n := range []string{"a b", "it's", "c:d", "new\nline", "tab\there", "$dollar", "x?", "#hash", "q\"uote", "it's $x", "ü-utf8", "lat1-\xe9", "{", "a{b", "~t", "b\\s", "@at"} {
		p := filepath.Join(odd, n)
		if err := os.WriteFile(p, []byte("x y\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		oddNames = append(oddNames, n)
	}
	t.Chdir(odd)
	for _, vars := range [][]string{cLocale, utf8Locale} {
		same(t, gnu, vars, nil, c.files[0], filepath.Join(c.dir, "missing"), c.files[1])
		same(t, gnu, vars, nil, "-l", "missing")
		same(t, gnu, vars, nil, "missing")
		same(t, gnu, vars, nil, "missing", "also-missing")
		same(t, gnu, vars, nil, append([]string{"-lc"}, oddNames...)...)
		for _, n := range oddNames {
			same(t, gnu, vars, nil, n+"-missing")
			same(t, gnu, vars, nil, n, "x")
		}
		same(t, gnu, vars, nil, "c:d/nope/x")
		same(t, gnu, vars, nil, "-q")
		same(t, gnu, vars, nil, "-lq", "x")
		same(t, gnu, vars, nil, "--foo")
		same(t, gnu, vars, nil, "--lines=3", "x")
		same(t, gnu, vars, nil, "--li", "--by", "--max", "a b")
		same(t, gnu, vars, nil, "a b", "-l")
		same(t, gnu, vars, nil, "--", "-l")
		same(t, gnu, vars, nil, "-", "-w")
	}
	// Options after an operand are operands with POSIXLY_CORRECT.
	same(t, gnu, []string{"LC_ALL=C", "POSIXLY_CORRECT=1"}, nil, "a b", "-l")
}

// TestUnreadable checks a file that exists but may not be read (GNU wc
// reports the open's error). Root reads everything, so it is skipped then.
func TestUnreadable(t *testing.T) {
	gnu := gnuWC(t)
	if os.Geteuid() == 0 {
		t.Skip("running as root: permissions do not stop reads")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte("x\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	same(t, gnu, cLocale, nil, p, p)
	same(t, gnu, cLocale, nil, "-c", p)
}

// TestDevices reads non-regular operands as streams: /dev/null, and a
// FIFO (width 7, as GNU wc gives any input that is not a regular file).
func TestDevices(t *testing.T) {
	gnu := gnuWC(t)
	c := makeCorpus(t)
	same(t, gnu, cLocale, nil, "/dev/null")
	same(t, gnu, cLocale, nil, "-l", "/dev/null", c.files[0])
	same(t, gnu, cLocale, nil, "-c", "/dev/null")

	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	feed := func() chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			f.WriteString("through a fifo\n")
			f.Close()
		}()
		return done
	}
	done := feed()
	want := runGNU(t, gnu, cLocale, nil, fifo, c.files[1])
	<-done
	done = feed()
	got := runOurs(t, cLocale, nil, fifo, c.files[1])
	<-done
	if got != want {
		t.Errorf("fifo: ours %+v, GNU %+v", got, want)
	}
}

// walkFiles lists the regular files under dir in the order a lexical
// walk visits them (filepath.WalkDir), as the operands GNU wc is given to
// compare with our wc DIR.
func walkFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDirectoryWalk checks our extension: wc DIR prints what GNU wc
// prints for the files under DIR named one by one in walk order — the
// same lines, the same widths, one total — however DIR is spelled.
func TestDirectoryWalk(t *testing.T) {
	gnu := gnuWC(t)
	c := makeCorpus(t)
	root := t.TempDir()
	tree := filepath.Join(root, "tree")
	for _, f := range []struct{ name, data string }{
		{"a.c", "int main;\n"},
		{"a/b", "under a\n"},
		{"a/z/deep", "deep down\nthere\n"},
		{"a-b", "dash\n"},
		{"B", "upper\n"},
		{"empty", ""},
		{"sub/big", ""}, // replaced by the big corpus file below
		{"sub/utf8", "Grüße 世界\u00a0x\n"},
		{"sub/x y", "space in name\n"},
		{"zz/only", "z"},
	} {
		p := filepath.Join(tree, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big, err := os.ReadFile(c.big)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "sub/big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(tree, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	rel := func(files []string, prefix string) []string {
		out := make([]string, len(files))
		for i, f := range files {
			r, err := filepath.Rel(tree, f)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = prefix + r
		}
		return out
	}
	files := walkFiles(t, tree)
	for _, vars := range [][]string{cLocale, utf8Locale} {
		for _, flags := range [][]string{nil, {"-l"}, {"-lwmcL"}, {"-c"}} {
			spellings := []struct{ op, prefix string }{{"tree", "tree/"}}
			if flags == nil {
				spellings = append(spellings, struct{ op, prefix string }{"tree/", "tree/"},
					struct{ op, prefix string }{"./tree", "./tree/"}, struct{ op, prefix string }{tree, tree + "/"})
			}
			for _, spell := range spellings {
				want := runGNU(t, gnu, vars, nil, append(slices.Clone(flags), rel(files, spell.prefix)...)...)
				got := runOurs(t, vars, nil, append(slices.Clone(flags), spell.op)...)
				if got != want {
					t.Errorf("%v wc %q %s:\nours:\n%s%s\nGNU on the files:\n%s%s", vars, flags, spell.op, got.stdout, got.stderr, want.stdout, want.stderr)
				}
			}
		}
		// A directory with one file is that file; an empty one prints
		// nothing; a directory among files takes its place in the order.
		same1 := func(ourArgs, gnuArgs []string) {
			t.Helper()
			want := runGNU(t, gnu, vars, nil, gnuArgs...)
			got := runOurs(t, vars, nil, ourArgs...)
			if got != want {
				t.Errorf("wc %q: ours %+v, GNU on %q: %+v", ourArgs, got, gnuArgs, want)
			}
		}
		same1([]string{"-l", "tree/zz"}, []string{"-l", "tree/zz/only"})
		same1([]string{"tree/a", "tree/B", "tree/zz"}, []string{"tree/a/b", "tree/a/z/deep", "tree/B", "tree/zz/only"})
		if got := runOurs(t, vars, nil, "tree/emptydir"); got != (result{}) {
			t.Errorf("wc on an empty directory: %+v, want nothing printed", got)
		}
	}
}

// TestDirectoryWalkErrors: what the walk cannot read is reported, the
// rest counted, the status 1.
func TestDirectoryWalkErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("one two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "b-fifo"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "c-dangling")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	got := runOurs(t, cLocale, nil, ".")
	want := result{
		stdout: "1 2 8 ./a\n1 2 8 total\n",
		stderr: "wc: ./b-fifo: Not a regular file\nwc: ./c-dangling: No such file or directory\n",
		status: 1,
	}
	if got != want {
		t.Errorf("wc . = %+v\nwant %+v", got, want)
	}
}

// TestComparePaths checks the walk order on names where plain string
// order and walk order differ.
func TestComparePaths(t *testing.T) {
	paths := []string{"d/a.c", "d/a/b", "d/a-b", "d/a", "d/B", "d/a/b/c", "d/ab"}
	slices.SortFunc(paths, comparePaths)
	want := []string{"d/B", "d/a", "d/a/b", "d/a/b/c", "d/a-b", "d/a.c", "d/ab"}
	if !slices.Equal(paths, want) {
		t.Errorf("sorted %q, want %q", paths, want)
	}
}

// TestBinary runs wc as a program (this test binary, acting as main) on
// a pipe, checking main's own wiring: arguments, streams, exit status.
func TestBinary(t *testing.T) {
	c := makeCorpus(t)
	empty := filepath.Join(c.dir, "empty")
	cmd := exec.Command(os.Args[0], "-lw", "-", empty, filepath.Join(c.dir, "missing"))
	cmd.Env = []string{"IOPATH_WC_TEST_MAIN=1", "LC_ALL=C"}
	cmd.Stdin = strings.NewReader("two words\nand three more\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1", err)
	}
	if want := "      2       5 -\n      0       0 " + empty + "\n      2       5 total\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if want := "wc: " + filepath.Join(c.dir, "missing") + ": No such file or directory\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
}

// TestHelpAndVersion: --help documents the directory walk, and both exit
// 0 before anything is read.
func TestHelpAndVersion(t *testing.T) {
	got := runOurs(t, nil, nil, "--help", "missing")
	if got.status != 0 || !strings.Contains(got.stdout, "A DIR is walked") || got.stderr != "" {
		t.Errorf("--help: %+v", got)
	}
	got = runOurs(t, nil, nil, "--vers")
	if got.status != 0 || !strings.Contains(got.stdout, "GNU coreutils wc 9.1") {
		t.Errorf("--version: %+v", got)
	}
}

// TestNoFDLeak counts this process's descriptors around runs that read
// small files, a big one (Scan), a tree and missing files.
func TestNoFDLeak(t *testing.T) {
	c := makeCorpus(t)
	before := testenv.OpenFDs(t)
	for range 3 {
		runOurs(t, cLocale, nil, append([]string{c.dir, c.big, "/nonexistent", "/dev/null"}, c.files...)...)
		runOurs(t, utf8Locale, nil, "-c", c.big, c.files[1])
	}
	if after := testenv.OpenFDs(t); after != before {
		t.Errorf("descriptors: %d before, %d after", before, after)
	}
}

// TestWriteError: a failed write to stdout is reported, status 1.
func TestWriteError(t *testing.T) {
	f, err := os.Open("/dev/null") // read-only: writes fail with EBADF
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var errb bytes.Buffer
	lookup := func(string) (string, bool) { return "", false }
	status := run(context.Background(), []string{"/dev/null"}, nil, f, &errb, lookup)
	if status != 1 || !strings.HasPrefix(errb.String(), "wc: write error: ") {
		t.Errorf("status %d, stderr %q", status, errb.String())
	}
}
