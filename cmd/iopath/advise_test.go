package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testenv"
	"github.com/iopath/iopath/perf/perftest"

	"github.com/iopath/iopath/advise"
	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/report"
)

// adviseTree writes a small tree of files of assorted sizes, a symlink to
// one of them and one file of a few MiB, under a directory every user can
// enter (so that a child process running as nobody can read it).
func adviseTree(t *testing.T) (dir, tree, big string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "advise-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Make it writable again so that it can be removed by a user
		// other than root.
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tree = filepath.Join(dir, "tree")
	for i := range 200 {
		p := filepath.Join(tree, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%03d.dat", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte{byte(i), byte(i >> 3), 7}, 1+(i*131)%6000)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("d1/f001.dat", filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	big = filepath.Join(dir, "big.bin")
	data := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16+77)
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, tree, big
}

// fileState is what must not change about an entry: its type and mode,
// size, content, mtime and ctime (which any chmod, chown, rename, link or
// write moves). atime may change: reading is allowed.
type fileState struct {
	mode         fs.FileMode
	size         int64
	mtime, ctime int64
	sum          [32]byte
	link         string
}

func snapshot(t *testing.T, root string) map[string]fileState {
	t.Helper()
	states := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		sys := st.Sys().(*syscall.Stat_t)
		s := fileState{mode: st.Mode(), size: st.Size(), mtime: st.ModTime().UnixNano(),
			ctime: sys.Ctim.Nano()}
		switch {
		case st.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			copy(s.sum[:], h.Sum(nil))
		case st.Mode()&fs.ModeSymlink != 0:
			s.link, _ = os.Readlink(p)
		}
		states[p] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return states
}

func sameStates(t *testing.T, what string, before, after map[string]fileState) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("%s: %d entries before, %d after", what, len(before), len(after))
	}
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s: %s is gone", what, p)
		} else if a != b {
			t.Errorf("%s: %s changed: %+v -> %+v", what, p, b, a)
		}
	}
}

func TestAdviseUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no path", []string{"advise"}, "advise: no PATH given"},
		{"zero budget", []string{"advise", "--budget", "0", dir}, "--budget 0s out of range [1s, 1h0m0s]"},
		{"negative budget", []string{"advise", "--budget", "-5s", dir}, "--budget -5s out of range"},
		{"huge budget", []string{"advise", "--budget", "2h", dir}, "--budget 2h0m0s out of range"},
		{"budget not a duration", []string{"advise", "--budget", "soon", dir}, "soon"},
		{"format", []string{"advise", "--format", "xml", dir}, `--format "xml": want one of table, json, csv, markdown`},
		{"stdin", []string{"advise", "-"}, "stdin"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(tt.args...)
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "iopath: ") || !strings.Contains(errOut, tt.msg) {
				t.Errorf("stderr %q: want one line with %q", errOut, tt.msg)
			}
		})
	}
}

func TestAdviseBadPaths(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"missing", []string{missing}, "iopath: advise: " + missing + ": no such file or directory\n"},
		{"fifo", []string{fifo}, "iopath: advise: " + fifo + ": not a regular file or directory (a named pipe)\n"},
		{"empty dir", []string{empty}, "iopath: advise: " + empty + ": no regular files under it: nothing to read\n"},
		// Pseudo-files have no stable size to measure.
		{"procfs file", []string{"/proc/self/status"}, "iopath: advise: /proc/self/status: " + bench.ErrPseudoFile.Error() + "\n"},
		{"procfs file in a list", []string{"/proc/cpuinfo", fifo}, "iopath: advise: /proc/cpuinfo: " + bench.ErrPseudoFile.Error() + "\n"},
		{"sysfs file", []string{"/sys/kernel/mm/transparent_hugepage/enabled"}, "iopath: advise: /sys/kernel/mm/transparent_hugepage/enabled: " + bench.ErrPseudoFile.Error() + "\n"},
		{"procfs directory", []string{"/proc/self/net"}, "iopath: advise: /proc/self/net: " + bench.ErrPseudoFile.Error() + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, errOut, code := runCLI(append([]string{"advise", "--budget", "1s"}, tt.args...)...)
			if code != 1 || out != "" || errOut != tt.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, out, errOut, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to refuse", d)
			}
		})
	}
}

// adviseTestBudget is the budget of the tests whose advise must measure
// something: enough for a busy machine (two race-built test runs on two
// CPUs) to list, warm and measure the small test data, where 1 s was not.
const adviseTestBudget = "3s"

func TestAdviseJSON(t *testing.T) {
	_, tree, _ := adviseTree(t)
	out, errOut, code := runCLI("advise", "--budget", adviseTestBudget, "--format", "json", tree)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if errOut != "" {
		t.Errorf("stderr %q: no progress without a terminal", errOut)
	}
	var res struct {
		SchemaVersion int    `json:"schema_version"`
		Kind          string `json:"kind"`
		Inventory     struct {
			Kind  string `json:"kind"`
			Files int    `json:"files"`
		} `json:"inventory"`
		Measurements []struct {
			Engine string  `json:"engine"`
			Rate   float64 `json:"rate_per_s"`
		} `json:"measurements"`
		Recommendation struct {
			Engine string  `json:"engine"`
			Ratio  float64 `json:"ratio"`
			Text   string  `json:"text"`
		} `json:"recommendation"`
		Snippet string `json:"snippet"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if res.SchemaVersion != advise.SchemaVersion || res.Kind != advise.JSONKind || res.Inventory.Kind != "many_files" || res.Inventory.Files != 201 ||
		len(res.Measurements) == 0 || res.Recommendation.Engine == "" || res.Recommendation.Ratio <= 0 ||
		!strings.Contains(res.Snippet, "iopath.ReadFiles(") {
		t.Errorf("result %+v", res)
	}
}

// TestAdviseNeverModifies runs advise on a tree and on a file and checks
// that nothing about any entry changed but its access time; then makes the
// data read-only and runs it again as a user who cannot write there
// (nobody, when the test runs as root, since root writes through any
// mode), where a write would fail.
func TestAdviseNeverModifies(t *testing.T) {
	dir, tree, big := adviseTree(t)
	before := snapshot(t, dir)

	out, errOut, code := runCLI("advise", "--budget", adviseTestBudget, tree)
	if code != 0 {
		t.Fatalf("tree: exit %d: %s", code, errOut)
	}
	for _, want := range []string{tree + ": 201 files", "readfile (baseline)", "\nuse `", "iopath.ReadFiles(ctx, paths,", "iopath's Auto would pick"} {
		if !strings.Contains(out, want) {
			t.Errorf("tree: output lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = runCLI("advise", "--budget", adviseTestBudget, big)
	if code != 0 {
		t.Fatalf("file: exit %d: %s", code, errOut)
	}
	for _, want := range []string{big + ": one file of 3.0 MiB", "read (baseline)", "× plain read", "iopath.Scan(ctx, path,", "iopath.ReadFile(path,"} {
		if !strings.Contains(out, want) {
			t.Errorf("file: output lacks %q:\n%s", want, out)
		}
	}
	sameStates(t, "after advise", before, snapshot(t, dir))

	// Read-only: files 0444, directories 0555.
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		if d.IsDir() {
			return nil // after the walk: it must still be listed
		}
		return os.Chmod(p, 0o444)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{tree, filepath.Join(tree, "d0"), filepath.Join(tree, "d1"), filepath.Join(tree, "d2"), filepath.Join(tree, "d3"), filepath.Join(tree, "d4")} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	before = snapshot(t, dir)
	for _, p := range []string{tree, big} {
		out, errOut, code := adviseAsReader(t, dir, p)
		if code != 0 || !strings.Contains(out, "\nuse `") && !strings.Contains(out, "\nkeep ") {
			t.Errorf("%s, read-only: exit %d\nstdout:\n%s\nstderr:\n%s", p, code, out, errOut)
		}
		// nobody may not write root's files, so mincore hides their
		// cache state (Linux >= 5.0): advise must say so, not report
		// them 100% cached.
		if os.Geteuid() == 0 && !strings.Contains(out, "whether the data is cached cannot be seen") {
			t.Errorf("%s as nobody: no note that the cache state cannot be seen:\n%s", p, out)
		}
	}
	sameStates(t, "after advise on the read-only copy", before, snapshot(t, dir))
}

// adviseAsReader runs "iopath advise --budget 1s path" as a user who can
// read but not write the data: in-process when the test is not root, else
// as nobody (uid 65534) in a child process, from a copy of the test binary
// that user can execute.
func adviseAsReader(t *testing.T, dir, path string) (string, string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
			t.Fatalf("%s is writable: the test cannot show that advise does not write", path)
		}
		return runCLI("advise", "--budget", adviseTestBudget, path)
	}
	// The binary goes in a directory of its own: dir is being watched.
	binDir := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	bin := filepath.Join(binDir, "iopath.test")
	if _, err := os.Stat(bin); errors.Is(err, fs.ErrNotExist) {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "advise", "--budget", adviseTestBudget, path)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("cannot run a child as nobody: %v", err)
	}
	return stdout.String(), stderr.String(), code
}

func TestAdvisePermissionDenied(t *testing.T) {
	dir, _, big := adviseTree(t)
	if err := os.Chmod(big, 0); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := adviseAsReader(t, dir, big)
	want := "iopath: advise: " + big + ": permission denied\n"
	if code != 1 || out != "" || errOut != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, out, errOut, want)
	}
}

// advise --perf DIR: a profile per measured candidate and cache state,
// each breakdown in the JSON (valid against the schema) and in the
// table; nothing of perf left; the same names refused the second time.
func TestAdvisePerf(t *testing.T) {
	perftest.Need(t)
	_, _, big := adviseTree(t)
	dir := filepath.Join(t.TempDir(), "perf")
	tmp := t.TempDir() // the recording's TMPDIR, this test's alone
	t.Setenv("TMPDIR", tmp)
	args := []string{"advise", "--budget", adviseTestBudget, "--perf", dir, "--format", "json", big}
	out, errOut, code := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	validate(t, "advise", []byte(out))
	var res advise.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for _, m := range res.Measurements {
		if !m.Measured() {
			continue
		}
		want := filepath.Join(dir, advise.ProfileFile(m.Label, m.Cache))
		if m.Perf == nil || m.Perf.Samples == 0 || m.PerfProfile != want {
			t.Errorf("%s %s: breakdown %+v, profile %q (want %q)", m.Label, m.Cache, m.Perf, m.PerfProfile, want)
			continue
		}
		p := perftest.Read(t, want)
		var kernel, gofn bool
		for _, fn := range p.Function {
			kernel = kernel || strings.HasPrefix(fn.Filename, "[kernel")
			gofn = gofn || strings.HasPrefix(fn.Name, "github.com/iopath/iopath/")
		}
		if !kernel || !gofn || len(p.Sample) == 0 {
			t.Errorf("%s: %d samples, a kernel frame %v, a Go frame of iopath %v", want, len(p.Sample), kernel, gofn)
		}
		recorded++
	}
	if recorded == 0 {
		t.Fatal("nothing was recorded")
	}
	if left := testenv.ProcsMentioning(filepath.Join(tmp, "iopath-perf-")); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("temporary files left in TMPDIR: %v", ents)
	}
	var b bytes.Buffer
	if err := report.WriteAdvise(&b, "table", &res, report.DocOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Where the CPU went (perf)", "engine           cache  samples  user", "recorded with perf"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}

	// A profile's name that exists is refused, before the trial: advise
	// has no --force.
	existing := filepath.Join(dir, advise.ProfileFile("read", advise.Warm))
	start := time.Now()
	out, errOut, code = runCLI(args...)
	if code != 2 || out != "" || errOut != "iopath: advise: --perf: "+existing+": exists; remove it or give --perf another directory\n" {
		t.Errorf("over existing profiles: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refused after %v: not before the trial", d)
	}
}

// Without perf, --perf says why and how to get it, and advise goes on
// without it.
func TestAdvisePerfUnavailable(t *testing.T) {
	_, _, big := adviseTree(t)
	dir := filepath.Join(t.TempDir(), "perf")
	t.Setenv("PATH", t.TempDir())
	out, errOut, code := runCLI("advise", "--budget", adviseTestBudget, "--perf", dir, "--format", "json", big)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if errOut != "iopath: --perf: perf cannot record here: perf is not installed (Debian: apt-get install linux-perf); going on without it\n" {
		t.Errorf("stderr %q", errOut)
	}
	validate(t, "advise", []byte(out))
	if !strings.Contains(out, "--perf: no recordings: perf cannot record here") || strings.Contains(out, `"perf_profile"`) {
		t.Errorf("the result does not say why it has no recordings, or has some:\n%s", out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the directory %s was made, with nothing to put in it", dir)
	}
}

// Ctrl-C during advise --perf: advise stops within a second and leaves no
// perf process, no temporary directory and no profile; so does a second
// Ctrl-C that ends it at once.
func TestAdvisePerfInterrupted(t *testing.T) {
	perftest.Need(t)
	_, _, big := adviseTree(t)
	for _, signals := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d signals", signals), func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(t.TempDir(), "perf")
			cmd := exec.Command(os.Args[0], "advise", "--budget", "30s", "--perf", dir, big)
			cmd.Env = append(os.Environ(), cliEnv+"=1", "TMPDIR="+tmp)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			deadline := time.Now().Add(10 * time.Second)
			for len(testenv.ProcsMentioning(filepath.Join(tmp, "iopath-perf-"))) == 0 { // perf
				if time.Now().After(deadline) {
					t.Fatalf("no recording started: %s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond) // into the trial
			start := time.Now()
			for range signals {
				cmd.Process.Signal(syscall.SIGINT)
				time.Sleep(150 * time.Millisecond) // past signalEcho
			}
			err := cmd.Wait()
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Errorf("stopping took %v", d)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Errorf("exit %v, want 130: %s", err, stderr.String())
			}
			checkNoPerfLeft(t, tmp, dir)
		})
	}
}
