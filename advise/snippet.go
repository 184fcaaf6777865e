package advise

import (
	"fmt"
	"strings"
)

// Snippet returns the Go code that reads data of kind k through candidate
// c with package iopath: iopath.ReadFiles for many files; iopath.Scan
// (every block once, what the trial measured) and iopath.ReadFile (the
// whole file in memory) for one file. It is a fragment of a function body
// in which ctx, and paths or path, are in scope.
func Snippet(k Kind, c Candidate) string {
	opts := options(c)
	var b strings.Builder
	if k == ManyFiles {
		b.WriteString("err := iopath.ReadFiles(ctx, paths, func(path string, data []byte, err error) error {\n")
		b.WriteString("\tif err != nil {\n")
		b.WriteString("\t\treturn err // or note it and return nil to go on with the other files\n")
		b.WriteString("\t}\n")
		b.WriteString("\t// data is valid only during the call: copy what you keep.\n")
		if c.Workers > 1 && c.Engine != "readfile" {
			fmt.Fprintf(&b, "\t// Calls come from %d goroutines at once.\n", c.Workers)
		}
		b.WriteString("\treturn nil\n")
		fmt.Fprintf(&b, "}, %s)\n", strings.Join(opts, ", "))
		return b.String()
	}
	b.WriteString("// Every block once, handed to a func (what the trial measured):\n")
	b.WriteString("err := iopath.Scan(ctx, path, func(off int64, b []byte) error {\n")
	b.WriteString("\t// b is valid only during the call: copy what you keep.\n")
	if c.Workers > 1 {
		fmt.Fprintf(&b, "\t// Calls come from %d goroutines at once.\n", c.Workers)
	}
	b.WriteString("\treturn nil\n")
	fmt.Fprintf(&b, "}, %s)\n", strings.Join(opts, ", "))
	b.WriteString("\n// Or the whole file in memory:\n")
	fmt.Fprintf(&b, "data, err := iopath.ReadFile(path, %s)\n", strings.Join(opts, ", "))
	return b.String()
}

// options are the iopath options for c, as code.
func options(c Candidate) []string {
	opts := []string{fmt.Sprintf("iopath.WithEngine(%q)", c.Engine)}
	// Every engine reads with one worker unless told otherwise (pool:
	// 128, said anyway); readfile reads one file at a time whatever
	// WithWorkers says.
	if c.Engine != "readfile" && (c.Workers > 1 || c.Engine == "pool") {
		opts = append(opts, fmt.Sprintf("iopath.WithWorkers(%d)", c.Workers))
	}
	return opts
}
