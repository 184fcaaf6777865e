package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/units"
)

// treeLegend explains the many-files table.
const treeLegend = `files/s        median over the runs (min–max): files delivered (each whole, or with its
               own error) per second of wall time (walk, open, read, close included)
GiB/s          bytes delivered per second, median
P50 P99 P99.9  latency per file: first syscall for it to its bytes being available
syscalls/file  counted at the engine's own call sites (the directory walk is not counted):
               openat, read, close for raw; for readfile and pool, those the os
               package makes for the engine's calls (openat, epoll_ctl, fstat,
               reads, close); io_uring_enter for io_uring; reads of the archive for archive
CPU-s/1k       user+system CPU seconds per 1,000 files: lower is better
cs/file        context switches (voluntary and involuntary) per file
errors         files delivered with their own error, per pass
checksum       ok: every run delivered the bytes os.ReadFile reads, file by file
`

// TreeTable writes a many-files report (bench --tree) as a table.
func TreeTable(w io.Writer, r *bench.Report) error {
	var b bytes.Buffer
	field := func(label, value string) {
		if value != "" {
			fmt.Fprintf(&b, "%-9s %s\n", label+":", value)
		}
	}
	if t := r.Tree; t != nil {
		extra := []string{plural(int(t.Files), "file"), units.FormatSize(t.Bytes)}
		if t.Temporary {
			extra = append(extra, "temporary")
		}
		field("tree", fmt.Sprintf("%s (%s)", units.QuotePath(t.Dir), strings.Join(extra, ", ")))
		if t.Archive != "" {
			field("archive", units.QuotePath(t.Archive))
		}
	}
	field("machine", machineLine(r))
	field("io_uring", r.Machine.IOURing)
	field("version", versionLine(r))
	field("command", units.EscapeControls(r.Command))
	if !r.Started.IsZero() {
		field("started", r.Started.Format("2006-01-02 15:04:05 MST"))
	}

	heads := []string{"engine", "cache", "files/s", "(min–max)", "GiB/s", "P50", "P99", "P99.9", "syscalls/file", "CPU-s/1k", "cs/file", "errors", "checksum"}
	right := []bool{false, false, true, false, true, true, true, true, true, true, true, true, false}
	var rows [][]string
	var errRows []int
	for i := range r.Results {
		res := &r.Results[i]
		name := res.Engine
		if res.Workers > 1 {
			name += fmt.Sprintf(" ×%d", res.Workers)
		}
		if res.QD > 0 {
			name += fmt.Sprintf(" qd%d", res.QD)
		}
		if res.Error != "" {
			rows = append(rows, []string{name, res.Cache, failure(res)})
			errRows = append(errRows, len(rows)-1)
			continue
		}
		spread := ""
		if len(res.Runs) > 1 {
			spread = fmt.Sprintf("(%s–%s)", count(int64(res.FilesPerSMin)), count(int64(res.FilesPerSMax)))
		}
		sc := fixed(res.SyscallsPerFile, 2)
		fps := count(int64(res.FilesPerS))
		if res.NoisyRuns > 0 {
			fps += noisyMark
		}
		rows = append(rows, []string{name, res.Cache, fps, spread, gibps(res.BytesPerS),
			latency(res.LatP50Ns), latency(res.LatP99Ns), latency(res.LatP999Ns),
			sc, fixed(res.CPUSPer1kFiles, 3), fixed(res.CSwPerFile, 2), fmt.Sprint(res.FileErrors), checksum(res.ChecksumOK)})
	}
	widths := make([]int, len(heads))
	for i, h := range heads {
		widths[i] = width(h)
	}
	isErr := map[int]bool{}
	for _, i := range errRows {
		isErr[i] = true
	}
	for i, row := range rows {
		for j, c := range row {
			if isErr[i] && j == 2 {
				break
			}
			widths[j] = max(widths[j], width(c))
		}
	}
	line := func(cells []string, errRow bool) {
		var l strings.Builder
		for j, c := range cells {
			if j > 0 {
				l.WriteString("  ")
			}
			if errRow && j == 2 {
				l.WriteString(c)
				break
			}
			pad := strings.Repeat(" ", widths[j]-width(c))
			if right[j] {
				l.WriteString(pad + c)
			} else {
				l.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	b.WriteByte('\n')
	if len(rows) == 0 {
		b.WriteString("no results\n")
	} else {
		line(heads, false)
		for i, row := range rows {
			line(row, isErr[i])
		}
		b.WriteByte('\n')
		b.WriteString(treeLegend)
	}
	var notes []string
	for _, n := range r.Notes {
		notes = append(notes, oneLine(n))
	}
	for _, res := range r.Results {
		label := fmt.Sprintf("%s ×%d (%s)", res.Engine, res.Workers, res.Cache)
		for _, n := range res.Notes {
			notes = append(notes, label+": "+oneLine(n))
		}
		for i, run := range res.Runs {
			if run.Noisy != "" {
				notes = append(notes, fmt.Sprintf("%s run %d: noisy: %s", label, i+1, run.Noisy))
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range notes {
			b.WriteString("  - " + n + "\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
