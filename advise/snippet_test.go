package advise

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var snippetCases = []struct {
	kind Kind
	c    Candidate
	want []string
	not  []string
}{
	{ManyFiles, Candidate{"raw", 2}, []string{"iopath.ReadFiles(ctx, paths,", `iopath.WithEngine("raw"), iopath.WithWorkers(2))`, "2 goroutines at once"}, []string{"iopath.Scan"}},
	{ManyFiles, Candidate{"raw", 1}, []string{`}, iopath.WithEngine("raw"))`}, []string{"WithWorkers", "goroutines at once"}},
	{ManyFiles, Candidate{"readfile", 1}, []string{`iopath.WithEngine("readfile"))`}, []string{"WithWorkers"}},
	{ManyFiles, Candidate{"pool", 128}, []string{`iopath.WithEngine("pool"), iopath.WithWorkers(128))`}, nil},
	{ManyFiles, Candidate{"io_uring", 2}, []string{`iopath.WithEngine("io_uring"), iopath.WithWorkers(2))`}, nil},
	{OneFile, Candidate{"pread", 2}, []string{"iopath.Scan(ctx, path, func(off int64, b []byte) error {", `}, iopath.WithEngine("pread"), iopath.WithWorkers(2))`,
		`data, err := iopath.ReadFile(path, iopath.WithEngine("pread"), iopath.WithWorkers(2))`, "2 goroutines at once"}, []string{"ReadFiles"}},
	{OneFile, Candidate{"mmap", 1}, []string{`}, iopath.WithEngine("mmap"))`, `iopath.ReadFile(path, iopath.WithEngine("mmap"))`}, []string{"WithWorkers"}},
	{OneFile, Candidate{"io_uring", 1}, []string{`iopath.WithEngine("io_uring")`}, nil},
}

// snippetProgram wraps the snippets in a program that uses every variable.
func snippetProgram() string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\t\"context\"\n\n\t\"github.com/iopath/iopath\"\n)\n\n")
	for i, tt := range snippetCases {
		fmt.Fprintf(&b, "func f%d(ctx context.Context, path string, paths []string) error {\n%s", i, Snippet(tt.kind, tt.c))
		if tt.kind == OneFile {
			b.WriteString("_ = data\n")
		}
		b.WriteString("return err\n}\n\n")
	}
	b.WriteString("func main() {}\n")
	return b.String()
}

func TestSnippet(t *testing.T) {
	for _, tt := range snippetCases {
		t.Run(fmt.Sprintf("%s/%s", tt.kind, tt.c.Label()), func(t *testing.T) {
			s := Snippet(tt.kind, tt.c)
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("snippet lacks %q:\n%s", w, s)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(s, n) {
					t.Errorf("snippet has %q:\n%s", n, s)
				}
			}
		})
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "snippets.go", snippetProgram(), parser.AllErrors); err != nil {
		t.Fatalf("the snippets are not Go: %v\n%s", err, snippetProgram())
	}
}

// TestSnippetCompiles builds the snippets against this checkout's package
// iopath, in a scratch module that points at it, so that a change of the
// public API that breaks the advice fails here.
func TestSnippetCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with the go command (-short)")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("no go command at %s to build with", goBin)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod := fmt.Sprintf("module snippetcheck\n\ngo 1.26\n\nrequire github.com/iopath/iopath v0.0.0\n\nreplace github.com/iopath/iopath => %s\n", root)
	for name, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": []byte(snippetProgram())} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goBin, "build", "-mod=mod", "-o", os.DevNull, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the snippets do not build against package iopath: %v\n%s\n%s", err, out, snippetProgram())
	}
}
