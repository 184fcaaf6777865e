package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/report"
)

// compareCLI runs iopath with args and returns stdout, stderr and the exit
// code.
func compareCLI(args ...string) (string, string, int) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	code := exitCode(err, &stderr)
	return stdout.String(), stderr.String(), code
}

// compareResult is a result of three runs at median gib GiB/s, ±2%.
func compareResult(engine, cache string, gib float64) bench.Result {
	var runs []bench.Run
	for _, f := range []float64{0.98, 1, 1.02} {
		b := gib * f * (1 << 30)
		wall := int64((1 << 30) / b * 1e9)
		runs = append(runs, bench.Run{Passes: 1, Bytes: 1 << 30, WallNs: wall, BytesPerS: b,
			UserNs: wall / 5, SysNs: wall / 2, LatP99Ns: 40_000})
	}
	return bench.Result{Tool: bench.ToolIopath, Engine: engine, Cache: cache, Pattern: "seq", BS: 128 << 10,
		Workers: 1, Consume: "checksum", Runs: runs, BytesPerS: gib * (1 << 30),
		BytesPerSMin: 0.98 * gib * (1 << 30), BytesPerSMax: 1.02 * gib * (1 << 30),
		CPUSPerGiB: 0.7 / gib, LatP99Ns: 40_000}
}

// writeReports writes an old and a new report to dir: pread warm 20%
// faster, pread cold 10% slower, mmap warm the same.
func writeCompareReports(t *testing.T, dir string) (oldPath, newPath string) {
	t.Helper()
	rep := func(pw, pc, mw float64) *bench.Report {
		return &bench.Report{
			SchemaVersion: bench.SchemaVersion, Tool: bench.ToolIopath, Command: "iopath bench",
			Started: time.Date(2026, 11, 22, 2, 42, 11, 0, time.UTC),
			Machine: features.Machine{Kernel: "6.18.44", Arch: "amd64", Cores: 2, IopathVersion: "devel"},
			File:    bench.FileInfo{Path: "/var/tmp/data", SizeBytes: 1 << 30},
			Results: []bench.Result{compareResult("pread", "warm", pw), compareResult("pread", "cold", pc),
				compareResult("mmap", "warm", mw)},
		}
	}
	write := func(name string, r *bench.Report) string {
		var b bytes.Buffer
		if err := report.JSON(&b, r); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("old.json", rep(8, 1.5, 11)), write("new.json", rep(9.6, 1.35, 11.1))
}

func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	oldPath, newPath := writeCompareReports(t, dir)
	out, errOut, code := compareCLI("compare", oldPath, newPath)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d (slower rows must not fail without --fail-on-regression): %s", code, errOut)
	}
	for _, want := range []string{oldPath, newPath, "pread", "faster", "slower",
		"noise", "1 faster, 1 slower, 1 within noise", "Mann–Whitney"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Log("\n" + out)

	out, errOut, code = compareCLI("compare", "--format", "json", oldPath, newPath)
	if code != 0 {
		t.Fatalf("--format json: exit %d: %s", code, errOut)
	}
	var c report.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("--format json: %v:\n%s", err, out)
	}
	if len(c.Rows) != 3 || c.Summary.Faster != 1 || c.Old.Path != oldPath || c.New.Path != newPath || c.Kind != "file" {
		t.Errorf("--format json: %d rows, summary %+v, paths %q %q, kind %q", len(c.Rows), c.Summary, c.Old.Path, c.New.Path, c.Kind)
	}
	for format, want := range map[string]string{
		"markdown": "| pread | warm | 8.00 | 9.60 | +20.0% | faster |",
		"csv":      "engine,cache,gib_per_s_old,gib_per_s_new,gib_per_s_delta_pct,gib_per_s_verdict,",
	} {
		out, errOut, code = compareCLI("compare", "--format", format, oldPath, newPath)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--format %s: exit %d, %s; output lacks %q:\n%s", format, code, errOut, want, out)
		}
	}
}

func TestCompareHTMLFlag(t *testing.T) {
	dir := t.TempDir()
	oldPath, newPath := writeCompareReports(t, dir)
	html := filepath.Join(dir, "out.html")
	out, errOut, code := compareCLI("compare", oldPath, newPath, "--html", html)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "within noise") {
		t.Errorf("no table on stdout with --html:\n%s", out)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", `data-chart="compare-gib_per_s" data-series="3"`, "Content-Security-Policy"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("%d files in the directory, want 3 (no temporary file left)", len(ents))
	}

	_, errOut, code = compareCLI("compare", oldPath, newPath, "--html", filepath.Join(dir, "missing", "out.html"))
	if code != 2 || !strings.Contains(errOut, "missing/out.html") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("--html into a missing directory: exit %d, %q", code, errOut)
	}
	before, _ := os.ReadFile(newPath)
	_, errOut, code = compareCLI("compare", oldPath, newPath, "--html", newPath)
	if after, _ := os.ReadFile(newPath); code != 2 || !strings.Contains(errOut, "would be overwritten") || !bytes.Equal(before, after) {
		t.Errorf("--html NEW.json: exit %d, %q; the input must be refused and untouched", code, errOut)
	}
	_, errOut, code = compareCLI("compare", oldPath, newPath, "--html", dir)
	if code != 2 || !strings.Contains(errOut, "is a directory") {
		t.Errorf("--html DIR: exit %d, %q", code, errOut)
	}
}

func TestCompareFailOnRegression(t *testing.T) {
	dir := t.TempDir()
	oldPath, newPath := writeCompareReports(t, dir)
	// pread cold dropped 10%, beyond its ±2% spread.
	out, errOut, code := compareCLI("compare", oldPath, newPath, "--fail-on-regression", "5")
	if code != 1 || !strings.Contains(errOut, "regressed") || !strings.Contains(errOut, "pread cold GiB/s -10.0%") {
		t.Errorf("--fail-on-regression 5: exit %d, %q", code, errOut)
	}
	if !strings.Contains(out, "slower") {
		t.Errorf("--fail-on-regression 5: no table printed before failing:\n%s", out)
	}
	if _, errOut, code = compareCLI("compare", oldPath, newPath, "--fail-on-regression", "15"); code != 0 {
		t.Errorf("--fail-on-regression 15: exit %d, %q", code, errOut)
	}
	// The reverse comparison has no drop (pread warm became slower by 16.7%
	// going back, pread cold faster): it fails at 10, not at 20.
	if _, errOut, code = compareCLI("compare", newPath, oldPath, "--fail-on-regression", "10"); code != 1 || !strings.Contains(errOut, "pread warm") {
		t.Errorf("reverse, --fail-on-regression 10: exit %d, %q", code, errOut)
	}
	if _, errOut, code = compareCLI("compare", newPath, oldPath, "--fail-on-regression", "20"); code != 0 {
		t.Errorf("reverse, --fail-on-regression 20: exit %d, %q", code, errOut)
	}
	if _, errOut, code = compareCLI("compare", oldPath, newPath, "--fail-on-regression", "-1"); code != 2 {
		t.Errorf("--fail-on-regression -1: exit %d, %q", code, errOut)
	}
	if _, errOut, code = compareCLI("compare", oldPath, newPath, "--fail-on-regression", "x"); code != 2 {
		t.Errorf("--fail-on-regression x: exit %d, %q", code, errOut)
	}
}

func TestCompareErrors(t *testing.T) {
	dir := t.TempDir()
	oldPath, newPath := writeCompareReports(t, dir)
	notReport := filepath.Join(dir, "features.json")
	if err := os.WriteFile(notReport, []byte(`{"kernel": "6.18.44", "io_uring": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "table.txt")
	if err := os.WriteFile(notJSON, []byte("engine  cache  GiB/s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"compare"}, 2, "want two reports, OLD.json and NEW.json, got 0 arguments"},
		{[]string{"compare", oldPath}, 2, "got 1 argument "},
		{[]string{"compare", oldPath, newPath, newPath}, 2, "got 3 arguments"},
		{[]string{"compare", "--format", "xml", oldPath, newPath}, 2, `--format "xml": want one of table, json, csv, markdown`},
		{[]string{"compare", "--bogus", oldPath, newPath}, 2, "unknown flag"},
		{[]string{"compare", missing, newPath}, 1, missing + ": no such file or directory"},
		{[]string{"compare", oldPath, missing}, 1, missing + ": no such file or directory"},
		{[]string{"compare", oldPath, notReport}, 1, notReport + ": not an iopath report"},
		{[]string{"compare", notJSON, newPath}, 1, notJSON + ": not JSON"},
		{[]string{"compare", dir, newPath}, 1, dir + ": is a directory"},
	} {
		out, errOut, code := compareCLI(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "iopath: ") {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and one line with %q", tc.args[1:], code, errOut, tc.code, tc.want)
		}
		if out != "" {
			t.Errorf("%q: wrote to stdout: %q", tc.args[1:], out)
		}
	}
}

func TestCompareHelp(t *testing.T) {
	out, errOut, code := compareCLI("compare", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"iopath bench --runs 5 --json old.json", "iopath compare old.json new.json", "--fail-on-regression", "exits 0 even when"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	// Every kind compare reads is listed with its headline figures.
	for _, kind := range report.CompareKinds() {
		if !strings.Contains(out, "\n  "+kind+" ") {
			t.Errorf("help does not list the kind %q", kind)
		}
	}
}
