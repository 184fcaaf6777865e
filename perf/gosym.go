package perf

import (
	"debug/elf"
	"debug/gosym"
	"sync"
)

// goSymbols names the Go functions perf could not: a binary built by go
// run or go test is linked with -s, without the ELF symbol table perf
// reads, but every Go binary keeps its pclntab (the runtime needs it for
// tracebacks), and debug/gosym reads function names from it. perf script
// prints such a frame's address as an offset in the file; the program
// headers turn it into the address the pclntab knows.
type goSymbols struct {
	mu     sync.Mutex
	tables map[string]*goTable // by path; nil: not a Go binary, or unreadable
}

type goTable struct {
	tab   *gosym.Table
	loads []elf.ProgHeader // executable PT_LOAD segments
}

func (g *goSymbols) table(path string) *goTable {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.tables[path]; ok {
		return t
	}
	if g.tables == nil {
		g.tables = map[string]*goTable{}
	}
	t := readGoTable(path)
	g.tables[path] = t
	return t
}

func readGoTable(path string) *goTable {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		return nil
	}
	data, err := pcln.Data()
	if err != nil {
		return nil
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil
	}
	t := &goTable{tab: tab}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			t.loads = append(t.loads, p.ProgHeader)
		}
	}
	return t
}

// name is the function at file offset off of the Go binary at path.
func (g *goSymbols) name(path string, off uint64) (string, bool) {
	t := g.table(path)
	if t == nil {
		return "", false
	}
	for _, p := range t.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			if fn := t.tab.PCToFunc(off - p.Off + p.Vaddr); fn != nil {
				return fn.Name, true
			}
			return "", false
		}
	}
	return "", false
}
