package iopath

import (
	"fmt"

	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/sys"
)

// Access names the entry point a Plan is for: each reads differently, so
// Auto chooses for each on its own.
type Access int

const (
	// ForReadFile is ReadFile and ReadFileBuf: one file, whole.
	ForReadFile Access = iota
	// ForScan is Scan: every block of one file, once.
	ForScan
	// ForOpen is Open, then File.ReadAt and File.ReadBatch: positioned
	// reads, often random 4 KiB ones.
	ForOpen
	// ForReadFiles is ReadFiles: many files, each whole. Plan's path is
	// one of them, or a directory of them.
	ForReadFiles
	// ForWriteFile is WriteFile: Plan's path is the file to replace
	// (which need not exist).
	ForWriteFile
	// ForLog is OpenLog: Plan's path is the log file (which need not
	// exist).
	ForLog
)

func (a Access) String() string {
	switch a {
	case ForReadFile:
		return "ReadFile"
	case ForScan:
		return "Scan"
	case ForOpen:
		return "Open"
	case ForReadFiles:
		return "ReadFiles"
	case ForWriteFile:
		return "WriteFile"
	case ForLog:
		return "OpenLog"
	}
	return fmt.Sprintf("Access(%d)", int(a))
}

func (a Access) call() (call, bool) {
	switch a {
	case ForReadFile:
		return callReadFile, true
	case ForScan:
		return callScan, true
	case ForOpen:
		return callOpen, true
	case ForReadFiles:
		return callReadFiles, true
	case ForWriteFile:
		return callWriteFile, true
	case ForLog:
		return callOpenLog, true
	}
	return 0, false
}

// Choice is how iopath reads: the engine, its workers, block size and
// queue depth, the rule that chose them and why. Plan returns it before a
// read, and File.Choice for an open File, so that a program can log, test
// or pin the path iopath takes (WithEngine, WithWorkers, WithBlockSize and
// WithQueueDepth set each part).
type Choice struct {
	// Engine is "read", "pread", "readv", "mmap" or "io_uring" for one
	// file (ReadFile, Scan, Open); "readfile", "pool", "raw" or "io_uring"
	// for ReadFiles.
	Engine string
	// Workers is the goroutines (io_uring: rings) that read.
	Workers int
	// BlockSize is the bytes each request asks for; 0 means the
	// engine's default (128 KiB).
	BlockSize int
	// QueueDepth is io_uring's requests (ReadFiles: files) in flight per
	// ring; 0 means the engine's default.
	QueueDepth int
	// Rule names what decided: one of Auto's rules (docs/auto.md),
	// "with-engine" for WithEngine, "override" for IOPATH_ENGINE,
	// "small-file" for a ReadFile under 8 MiB, or "unsized" for a file
	// whose size means nothing (a pseudo-file, or size 0).
	Rule string
	// Reason is one sentence saying why, with the measurement behind it,
	// or which fallback was taken.
	Reason string
}

func (c Choice) String() string {
	s := fmt.Sprintf("%s ×%d", c.Engine, c.Workers)
	if c.BlockSize > 0 {
		s += fmt.Sprintf(", %d-byte blocks", c.BlockSize)
	}
	if c.QueueDepth > 0 {
		s += fmt.Sprintf(", queue depth %d", c.QueueDepth)
	}
	return s + " (" + c.Rule + "): " + c.Reason
}

func publicChoice(c auto.Choice) Choice {
	return Choice{Engine: c.Engine, Workers: c.Workers, BlockSize: c.BlockSize, QueueDepth: c.QueueDepth,
		Rule: c.Rule, Reason: c.Reason}
}

// Plan returns the path the entry point access would take to read the
// file at path with opts, as it stands now: the same decision the call
// makes, from the same measurements (the file's size, how much of it is
// in the page cache, what the kernel allows), without reading the file.
// The call decides again when it runs: a file that is cached between Plan
// and the read may be read another way. A fallback the call takes only
// when an engine fails to start (io_uring refused at setup) is not
// foreseen here; File.Choice reports it for an open File.
//
// Errors are those the call would give before reading: a bad option, an
// explicit engine that cannot run here (wrapping ErrNotSupported), and
// for one file, an *fs.PathError from opening it, EISDIR for a
// directory, ErrNotRegular for a FIFO, socket or device.
func Plan(path string, access Access, opts ...Option) (Choice, error) {
	c, err := planFor(path, access, opts)
	if err != nil {
		return Choice{}, public(err)
	}
	return publicChoice(c), nil
}

func planFor(path string, access Access, opts []Option) (auto.Choice, error) {
	call, ok := access.call()
	if !ok {
		return auto.Choice{}, fmt.Errorf("iopath: Plan: %v is not an Access", access)
	}
	o, err := parseOptions(call, opts)
	if err != nil {
		return auto.Choice{}, err
	}
	switch access {
	case ForWriteFile:
		return writeFilePlan(path, &o)
	case ForLog:
		return logPlan(path, &o)
	}
	if access == ForReadFiles {
		return plan(callReadFiles, &o, auto.Workload{Kind: auto.ManyFiles, Paths: []string{path}, Resident: -1})
	}
	op := "read"
	if access == ForOpen {
		op = "open"
	}
	// Scan opens the file without O_DIRECT to look at it (its engine
	// opens it with the flag), so Plan does too.
	fd, st, err := openRegular(path, o.direct && access != ForScan, op)
	if err != nil {
		return auto.Choice{}, err
	}
	defer sys.Close(fd) // read-only: close cannot lose data
	switch access {
	case ForScan:
		return scanPlan(fd, path, &st, &o, false)
	case ForOpen:
		return plan(callOpen, &o, auto.Workload{Kind: auto.Positioned, Path: path, Size: st.Size, Direct: o.direct, Resident: -1})
	}
	if err := o.checkEngine(callReadFile); err != nil {
		return auto.Choice{}, err
	}
	return wholePlan(fd, path, &st, &o)
}
