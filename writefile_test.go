package iopath

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/testenv"
)

// writeFileModes are the ways WriteFile can make its new file: each
// engine, with O_TMPFILE and with the named temporary file of
// filesystems that lack it.
var writeFileModes = []struct {
	name    string
	noTmp   bool
	uring   bool
	withOpt []Option
}{
	{"write", false, false, []Option{WithEngine("write")}},
	{"write-named", true, false, []Option{WithEngine("write")}},
	{"io_uring", false, true, []Option{WithEngine("io_uring")}},
	{"io_uring-named", true, true, []Option{WithEngine("io_uring")}},
}

// forEachWriteMode runs f for every way of making the new file, one
// after another (testHookNoTmpfile is global), skipping io_uring where
// the probe says it cannot run.
func forEachWriteMode(t *testing.T, f func(t *testing.T, opts []Option)) {
	for _, m := range writeFileModes {
		t.Run(m.name, func(t *testing.T) {
			if m.uring {
				if err := uringWritable(); err != nil {
					t.Skipf("io_uring unavailable here: %v", err)
				}
			}
			testHookNoTmpfile = m.noTmp
			defer func() { testHookNoTmpfile = false }()
			testenv.CheckFDs(t)
			f(t, m.withOpt)
		})
	}
}

// dirNames returns the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// onlyNames fails unless dir holds exactly names: no temporary file left.
func onlyNames(t *testing.T, dir string, names ...string) {
	t.Helper()
	slices.Sort(names)
	if have := dirNames(t, dir); !slices.Equal(have, names) {
		t.Fatalf("%s holds %q, want %q", dir, have, names)
	}
}

// checkFile fails unless path holds data with permission bits perm.
func checkFile(t *testing.T, path string, data []byte, perm fs.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("%s holds %d bytes, want %d (equal: %v)", path, len(got), len(data), bytes.Equal(got, data))
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != perm {
		t.Fatalf("%s has mode %v, want %v", path, st.Mode(), perm)
	}
}

// pathErr fails unless err is an *fs.PathError naming path whose cause
// is want, and returns the error's text.
func pathErr(t *testing.T, err, want error, path string) string {
	t.Helper()
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, want) {
		t.Fatalf("got %v; want an *fs.PathError naming %s wrapping %v", err, path, want)
	}
	if !strings.HasPrefix(err.Error(), "iopath: ") || strings.Count(err.Error(), "\n") > 0 {
		t.Fatalf("error %q: want one line starting \"iopath: \"", err)
	}
	return err.Error()
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// A new file, a replaced one, empty data, modes: the bytes and the mode
// are right, the file is a new inode, and nothing else is left in the
// directory.
func TestWriteFile(t *testing.T) {
	forEachWriteMode(t, func(t *testing.T, opts []Option) {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		// A new file: 0o644 by default. WithPerm(0o666) shows that the
		// umask (022 or so) does not apply.
		for _, c := range []struct {
			perm fs.FileMode
			opts []Option
		}{{0o644, nil}, {0o666, []Option{WithPerm(0o666)}}, {0o600, []Option{WithPerm(0o600)}}} {
			os.Remove(path)
			data := content(100_000, uint64(c.perm))
			if err := WriteFile(path, data, append(c.opts, opts...)...); err != nil {
				t.Fatal(err)
			}
			checkFile(t, path, data, c.perm)
			onlyNames(t, dir, "f")
		}
		// Replaced: the old mode stays, whatever WithPerm says.
		if err := os.Chmod(path, 0o640); err != nil {
			t.Fatal(err)
		}
		// The old file, held open, is not written: each replace is a new
		// inode (held, its number cannot be reused).
		oldData, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		held, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		ino := inode(t, path)
		for i, size := range []int{0, 1, 4095, 4096, 4097, 3 << 20} {
			data := content(size, uint64(i))
			if err := WriteFile(path, data, append([]Option{WithPerm(0o600)}, opts...)...); err != nil {
				t.Fatal(err)
			}
			checkFile(t, path, data, 0o640)
			onlyNames(t, dir, "f")
		}
		if inode(t, path) == ino {
			t.Fatalf("the file was written in place (inode %d kept), not replaced", ino)
		}
		if b, err := io.ReadAll(held); err != nil || !bytes.Equal(b, oldData) {
			t.Fatalf("the old file, held open, changed: %d bytes, %v", len(b), err)
		}
		// Empty data makes an empty file too.
		empty := filepath.Join(dir, "empty")
		if err := WriteFile(empty, nil, opts...); err != nil {
			t.Fatal(err)
		}
		checkFile(t, empty, nil, 0o644)
		onlyNames(t, dir, "f", "empty")
	})
}

// Through io_uring, data longer than one WRITE is a chain of several,
// each picking up where the last ended.
func TestWriteFileUringChain(t *testing.T) {
	if err := uringWritable(); err != nil {
		t.Skipf("io_uring unavailable here: %v", err)
	}
	testenv.CheckFDs(t)
	defer func(n int) { maxWriteSQE = n }(maxWriteSQE)
	maxWriteSQE = 4096
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, size := range []int{4095, 4096, 4097, 5*4096 + 17, 64 << 10} {
		data := content(size, uint64(size))
		if err := WriteFile(path, data, WithEngine("io_uring")); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, data, 0o644)
	}
	onlyNames(t, dir, "f")
}

// WithKeepOwner gives the new file the old one's owner and group;
// without it the new file is the caller's (here root's).
func TestWriteFileKeepOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give a file to another user")
	}
	forEachWriteMode(t, func(t *testing.T, opts []Option) {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		owner := func() (int, int) {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			s := st.Sys().(*syscall.Stat_t)
			return int(s.Uid), int(s.Gid)
		}
		for _, keep := range []bool{true, false} {
			if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, 1234, 5678); err != nil {
				t.Fatal(err)
			}
			o := opts
			if keep {
				o = append([]Option{WithKeepOwner()}, opts...)
			}
			if err := WriteFile(path, []byte("new"), o...); err != nil {
				t.Fatal(err)
			}
			checkFile(t, path, []byte("new"), 0o600)
			uid, gid := owner()
			if keep && (uid != 1234 || gid != 5678) {
				t.Fatalf("WithKeepOwner: owner %d:%d, want the old 1234:5678", uid, gid)
			}
			if !keep && (uid != os.Geteuid() || gid != os.Getegid()) {
				t.Fatalf("owner %d:%d, want the caller's %d:%d", uid, gid, os.Geteuid(), os.Getegid())
			}
			onlyNames(t, dir, "f")
		}
	})
}

// tmpfsDir mounts a new tmpfs with options opts on a new directory, for
// the test's life; it skips when this process may not mount.
func tmpfsDir(t *testing.T, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot mount a tmpfs here (%v): the test needs CAP_SYS_ADMIN", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// A full filesystem: the write fails with ENOSPC, the old file is as it
// was, and no temporary file is left.
func TestWriteFileNoSpace(t *testing.T) {
	forEachWriteMode(t, func(t *testing.T, opts []Option) {
		dir := tmpfsDir(t, "size=64k")
		path := filepath.Join(dir, "f")
		old := content(10_000, 1)
		if err := os.WriteFile(path, old, 0o600); err != nil {
			t.Fatal(err)
		}
		err := WriteFile(path, content(1<<20, 2), opts...)
		pathErr(t, err, syscall.ENOSPC, path)
		checkFile(t, path, old, 0o600)
		onlyNames(t, dir, "f")
		// Space enough again: it works.
		if err := WriteFile(path, content(20_000, 3), opts...); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, content(20_000, 3), 0o600)
		onlyNames(t, dir, "f")
	})
}

// A read-only filesystem (root ignores a directory's mode, so a mount it
// is): EROFS naming the path, nothing changed.
func TestWriteFileReadOnly(t *testing.T) {
	forEachWriteMode(t, func(t *testing.T, opts []Option) {
		dir := tmpfsDir(t, "size=1m")
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount read-only: %v", err)
		}
		for _, p := range []string{path, filepath.Join(dir, "new")} {
			pathErr(t, WriteFile(p, []byte("new"), opts...), syscall.EROFS, p)
		}
		checkFile(t, path, []byte("old"), 0o644)
		onlyNames(t, dir, "f")
	})
}

// A failed fsync (injected after the engine's) renames nothing and
// leaves no temporary file.
func TestWriteFileSyncFails(t *testing.T) {
	forEachWriteMode(t, func(t *testing.T, opts []Option) {
		dir := t.TempDir()
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		testHookWritten = func() (string, error) { return "fsync", syscall.EIO }
		defer func() { testHookWritten = nil }()
		msg := pathErr(t, WriteFile(path, []byte("new"), opts...), syscall.EIO, path)
		if !strings.Contains(msg, "fsync") {
			t.Errorf("error %q does not say fsync failed", msg)
		}
		checkFile(t, path, []byte("old"), 0o644)
		onlyNames(t, dir, "f")
	})
}

// A symbolic link is followed: the file it names is replaced in its own
// directory and the link stays; a dangling link gets its file made.
func TestWriteFileSymlink(t *testing.T) {
	forEachWriteMode(t, func(t *testing.T, opts []Option) {
		root := t.TempDir()
		a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
		for _, d := range []string{a, b} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		target := filepath.Join(b, "target")
		if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(a, "link")
		chain := filepath.Join(a, "chain")
		for l, dest := range map[string]string{link: "../b/target", chain: "link"} {
			if err := os.Symlink(dest, l); err != nil {
				t.Fatal(err)
			}
		}
		for i, p := range []string{link, chain} {
			data := []byte(fmt.Sprint("new ", i))
			if err := WriteFile(p, data, opts...); err != nil {
				t.Fatal(err)
			}
			checkFile(t, target, data, 0o600)
			if dest, err := os.Readlink(link); err != nil || dest != "../b/target" {
				t.Fatalf("the link became %q, %v", dest, err)
			}
			onlyNames(t, a, "chain", "link")
			onlyNames(t, b, "target")
		}
		// Dangling, and through a link to a directory.
		if err := os.Symlink("../b/made", filepath.Join(a, "dangling")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(b, filepath.Join(a, "dirlink")); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(filepath.Join(a, "dangling"), []byte("made"), opts...); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(filepath.Join(a, "dirlink", "other"), []byte("other"), opts...); err != nil {
			t.Fatal(err)
		}
		checkFile(t, filepath.Join(b, "made"), []byte("made"), 0o644)
		checkFile(t, filepath.Join(b, "other"), []byte("other"), 0o644)
		onlyNames(t, a, "chain", "dangling", "dirlink", "link")
		onlyNames(t, b, "made", "other", "target")
	})
}

// What cannot be replaced is an error naming the path, and nothing is
// written: a directory, a FIFO, a link loop, a missing directory.
func TestWriteFileNotRegular(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	fifo := filepath.Join(dir, "fifo")
	loop := filepath.Join(dir, "loop")
	file := filepath.Join(dir, "file")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "tosub")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want error
	}{
		{sub, syscall.EISDIR},
		{sub + "/", syscall.EISDIR},
		{filepath.Join(dir, "new") + "/", syscall.EISDIR},
		{filepath.Join(dir, "tosub"), syscall.EISDIR},
		{fifo, ErrNotRegular},
		{"/dev/null", ErrNotRegular},
		{loop, syscall.ELOOP},
		{filepath.Join(dir, "missing", "f"), fs.ErrNotExist},
		{filepath.Join(file, "f"), syscall.ENOTDIR},
		{"", fs.ErrNotExist},
	} {
		for i, opts := range [][]Option{nil, {WithEngine("write")}, {WithEngine("io_uring")}} {
			if i == 2 && uringWritable() != nil {
				continue
			}
			pathErr(t, WriteFile(c.path, []byte("x"), opts...), c.want, c.path)
			_, err := Plan(c.path, ForWriteFile, opts...)
			pathErr(t, err, c.want, c.path)
		}
	}
	onlyNames(t, dir, "fifo", "file", "loop", "sub", "tosub")
	onlyNames(t, sub)
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO became %v, %v", st.Mode(), err)
	}
}

// Options that are not WriteFile's are refused before anything is done.
func TestWriteFileOptions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, opts := range [][]Option{{WithWorkers(2)}, {WithPerm(0o4755)}, {WithEngine("mmap")}, {WithBatchBytes(1)}} {
		if err := WriteFile(path, []byte("x"), opts...); err == nil || !strings.HasPrefix(err.Error(), "iopath: WriteFile: ") {
			t.Errorf("%v: want an error from WriteFile's options", err)
		}
	}
	onlyNames(t, dir)
}

// Plan says what WriteFile does: Auto's write with its reason, or the
// engine WithEngine named.
func TestWriteFilePlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	c, err := Plan(path, ForWriteFile)
	if err != nil || c.Engine != "write" || c.Rule != ruleWriteFile || !strings.Contains(c.Reason, "fsync") {
		t.Fatalf("Plan: %v, %v; want write by rule %s", c, err, ruleWriteFile)
	}
	c, err = Plan(path, ForWriteFile, WithEngine("io_uring"))
	skipUnsupported(t, err)
	if err != nil || c.Engine != "io_uring" || c.Rule != ruleWithEngine {
		t.Fatalf("Plan WithEngine(io_uring): %v, %v", c, err)
	}
}

// io_uring disabled (IOPATH_DISABLE_IO_URING=1): Auto writes, and Plan
// says io_uring is unavailable and why; WithEngine("io_uring") fails
// with ErrNotSupported and the reason, leaving nothing behind.
func TestWriteFileUringDisabled(t *testing.T) {
	t.Setenv(features.DisableEnv, "1")
	checkRefused(t, features.DisableEnv)
}

// The same under a seccomp filter that forbids each io_uring call.
func TestWriteFileUringForbidden(t *testing.T) {
	requireUring(t)
	for _, call := range seccomptest.Calls() {
		t.Run(call, func(t *testing.T) {
			t.Parallel() // each runs in a process of its own
			seccomptest.Run(t, "TestWriteFileUringForbiddenChild", []string{call})
		})
	}
}

func TestWriteFileUringForbiddenChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestWriteFileUringForbidden: runs only under its seccomp filter")
	}
	checkRefused(t, seccomptest.Denied()[0])
}

// checkRefused checks WriteFile and Plan where io_uring is refused, for
// a reason that mentions why.
func checkRefused(t *testing.T, why string) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	c, err := Plan(path, ForWriteFile)
	if err != nil || c.Engine != "write" || !strings.Contains(c.Reason, "io_uring is unavailable") || !strings.Contains(c.Reason, why) {
		t.Fatalf("Plan with io_uring refused: %v, %v; want write, saying io_uring is unavailable because of %s", c, err, why)
	}
	if err := WriteFile(path, []byte("auto")); err != nil {
		t.Fatalf("WriteFile under Auto with io_uring refused: %v", err)
	}
	for range 3 {
		err := WriteFile(path, []byte("io_uring"), WithEngine("io_uring"))
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), why) || !strings.HasPrefix(err.Error(), "iopath: WriteFile: ") {
			t.Fatalf("WithEngine(io_uring) with io_uring refused: %v; want ErrNotSupported saying %s", err, why)
		}
		if _, err := Plan(path, ForWriteFile, WithEngine("io_uring")); !errors.Is(err, ErrNotSupported) {
			t.Fatalf("Plan WithEngine(io_uring) with io_uring refused: %v; want ErrNotSupported", err)
		}
	}
	checkFile(t, path, []byte("auto"), 0o644)
	onlyNames(t, dir, "f")
}

// Writers racing on one path: each replace is whole (readers meanwhile
// see one writer's bytes, every time), the last wins, and nothing is
// left behind.
func TestWriteFileConcurrent(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	const writers, rounds, size = 8, 10, 64 << 10
	engines := []string{"write"}
	if uringWritable() == nil {
		engines = append(engines, "io_uring")
	}
	stop := make(chan struct{})
	read := make(chan error, 1)
	go func() {
		defer close(read)
		for seen := 0; ; seen++ {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(path)
			if err == nil && (len(b) != size || bytes.Count(b, b[:1]) != size) {
				read <- fmt.Errorf("read %d of a file: %d bytes, not one writer's %d", seen, len(b), size)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			data := bytes.Repeat([]byte{byte('a' + w)}, size)
			for range rounds {
				if err := WriteFile(path, data, WithEngine(engines[w%len(engines)])); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	onlyNames(t, dir, "f")
}

// killChildEnv names the file TestWriteFileKillChild rewrites, and
// killEngineEnv the engine it uses; killNamedEnv=1 makes it use the named
// temporary file.
const (
	killChildEnv  = "IOPATH_TEST_WRITEFILE_KILL"
	killEngineEnv = "IOPATH_TEST_WRITEFILE_ENGINE"
	killNamedEnv  = "IOPATH_TEST_WRITEFILE_NAMED"
	killSize      = 4 << 20
)

// SIGKILL in the middle of a stream of WriteFiles: the file is always
// one whole version, never a mix, never short, never missing.
func TestWriteFileKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts dozens of processes")
	}
	engines := []string{"write"}
	if uringWritable() == nil {
		engines = append(engines, "io_uring")
	}
	type trial struct {
		engine string
		named  bool
	}
	const withTmpfile, withNamed = 20, 4
	var trials []trial
	for i := range withTmpfile + withNamed {
		trials = append(trials, trial{engines[i%len(engines)], i >= withTmpfile})
	}
	var mu sync.Mutex
	gens := map[byte]int{}
	left := map[bool]int{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, tr := range trials {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			gen, leftover, err := killTrial(t, tr.engine, tr.named, time.Duration(rand.IntN(40_000))*time.Microsecond)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("trial %d (%s, named temporary %v): %v", i, tr.engine, tr.named, err)
				return
			}
			gens[gen]++
			left[tr.named] += leftover
		})
	}
	wg.Wait()
	t.Logf("%d kills: generations seen %v; temporary files left: %d in %d trials with O_TMPFILE, %d in %d with a named one",
		len(trials), gens, left[false], withTmpfile, left[true], withNamed)
	// Only a kill between the link and the rename leaves one (a few
	// percent of the kills here, on a busy disk); half or more would
	// mean the file was named long before its rename.
	if 2*left[false] >= withTmpfile {
		t.Errorf("%d temporary files left by %d kills with O_TMPFILE: only a kill between link and rename should leave one",
			left[false], withTmpfile)
	}
}

// killTrial starts a child that rewrites a file with WriteFile in a loop,
// kills it after delay, and checks the file. It returns the generation
// the file holds and how many temporary files were left.
func killTrial(t *testing.T, engine string, named bool, delay time.Duration) (byte, int, error) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, make([]byte, killSize), 0o644); err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path, killEngineEnv+"="+engine)
	if named {
		cmd.Env = append(cmd.Env, killNamedEnv+"=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("child said %q", line)
		}
		ready <- err
		io.Copy(io.Discard, out)
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = errors.New("child not ready after 30 s")
	}
	if err == nil {
		time.Sleep(delay)
	}
	cmd.Process.Kill()
	werr := cmd.Wait()
	if err != nil {
		return 0, 0, fmt.Errorf("%v (%v)\n%s", err, werr, stderr.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		return 0, 0, fmt.Errorf("the child ended before the kill: %v\n%s", werr, stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("after the kill: %v", err)
	}
	if len(b) != killSize {
		return 0, 0, fmt.Errorf("after the kill the file has %d bytes, not %d", len(b), killSize)
	}
	if n := bytes.Count(b, b[:1]); n != killSize {
		return 0, 0, fmt.Errorf("after the kill %d of the file's bytes are %d, the rest not: a mix of versions", n, b[0])
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	leftover := 0
	for _, e := range ents {
		if !strings.Contains(e.Name(), ".iopath-") {
			continue
		}
		leftover++
		// An unnamed file is named only once written and synced: what
		// is left is a whole version too.
		if !named {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil || len(b) != killSize || bytes.Count(b, b[:1]) != killSize {
				return 0, 0, fmt.Errorf("the temporary file %s left by the kill is not a whole version (%d bytes, %v)",
					e.Name(), len(b), err)
			}
		}
	}
	return b[0], leftover, nil
}

// TestWriteFileKillChild is the child of TestWriteFileKill: it rewrites
// the file with generation after generation, each every byte the
// generation's number, until it is killed.
func TestWriteFileKillChild(t *testing.T) {
	path := os.Getenv(killChildEnv)
	if path == "" {
		t.Skip("the child half of TestWriteFileKill: runs only in its child process")
	}
	testHookNoTmpfile = os.Getenv(killNamedEnv) == "1"
	data := make([]byte, killSize)
	for gen := 1; ; gen++ {
		data[0] = byte(gen)
		for n := 1; n < len(data); n *= 2 {
			copy(data[n:], data[:n])
		}
		if err := WriteFile(path, data, WithEngine(os.Getenv(killEngineEnv))); err != nil {
			t.Fatal(err)
		}
		if gen == 1 {
			fmt.Println("ready")
		}
	}
}

// BenchmarkWriteFile: each engine, and os.WriteFile with a Sync (in
// place, so not atomic: one fsync, the floor of a durable write) and a
// temporary file renamed with the os package (what WriteFile does,
// without O_TMPFILE), each with the process's CPU time per write. The
// "alternated" runs write with both engines in turn, in alternating
// order, so that the disk's drift (large on a shared VM) hits both alike,
// and report each one's median: what Auto's choice rests on.
func BenchmarkWriteFile(b *testing.B) {
	ways := []struct {
		name  string
		write func(path string, data []byte) error
	}{
		{"write", func(p string, d []byte) error { return WriteFile(p, d, WithEngine("write")) }},
		{"io_uring", func(p string, d []byte) error { return WriteFile(p, d, WithEngine("io_uring")) }},
		{"os.WriteFile+Sync", osWriteSync},
		{"os-temp-rename", osTempRename},
	}
	for _, size := range []int{4 << 10, 64 << 10, 8 << 20} {
		data := content(size, 1)
		for _, w := range ways {
			b.Run(fmt.Sprintf("size=%dKiB/%s", size>>10, w.name), func(b *testing.B) {
				if w.name == "io_uring" && uringWritable() != nil {
					b.Skipf("io_uring unavailable here: %v", uringWritable())
				}
				path := filepath.Join(b.TempDir(), "f")
				if err := w.write(path, data); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				cpu := cpuTime()
				for b.Loop() {
					if err := w.write(path, data); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu)/1e3/float64(b.N), "cpu-µs/op")
			})
		}
		b.Run(fmt.Sprintf("size=%dKiB/alternated", size>>10), func(b *testing.B) {
			if err := uringWritable(); err != nil {
				b.Skipf("io_uring unavailable here: %v", err)
			}
			path := filepath.Join(b.TempDir(), "f")
			engines := [2]string{"write", "io_uring"}
			var took [2][]float64
			for i := 0; b.Loop(); i++ {
				for k := range 2 {
					e := (i + k) % 2
					start := time.Now()
					if err := WriteFile(path, data, WithEngine(engines[e])); err != nil {
						b.Fatal(err)
					}
					took[e] = append(took[e], float64(time.Since(start).Microseconds()))
				}
			}
			b.ReportMetric(stats.Median(took[0]), "write-µs")
			b.ReportMetric(stats.Median(took[1]), "io_uring-µs")
		})
	}
}

// cpuTime is the user and system CPU time this process has used, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// osWriteSync is os.WriteFile followed by an fsync of the file.
func osWriteSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// osTempRename is an atomic replace with the os package: a named
// temporary file, written, synced, renamed, and the directory synced.
func osTempRename(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
