package fio

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRecordTestdata re-records testdata/*.json with the fio on PATH. It
// runs only when IOPATH_FIO_RECORD is 1 (every file) or a comma-separated
// list of names (those files only):
//
//	IOPATH_FIO_RECORD=1 go test -run TestRecordTestdata ./fio
//	IOPATH_FIO_RECORD=psync_write_fdatasync4 go test -run TestRecordTestdata ./fio
//
// The tests that read the files check figures of the recorded runs:
// update them after recording.
func TestRecordTestdata(t *testing.T) {
	which := os.Getenv("IOPATH_FIO_RECORD")
	if which == "" {
		t.Skip("set IOPATH_FIO_RECORD=1 (or to names) to re-record testdata with the fio on PATH")
	}
	info := needFio(t)
	path := writeFile(t, 1<<20)
	base := Job{Path: path, FileSize: 1 << 20, BlockSize: 4096, Workers: 1, QueueDepth: 8, Seed: 7}
	edit := func(j Job, f func(*Job)) Job { f(&j); return j }
	recs := []struct {
		name  string
		job   Job
		extra []string // appended: later options override earlier ones
		drop  string   // an argument to leave out
		fails bool
	}{
		{name: "psync_seq", job: edit(base, func(j *Job) { j.Engine = "pread" })},
		{name: "io_uring_rand_qd8", job: edit(base, func(j *Job) { j.Engine = "io_uring"; j.Random = true })},
		{name: "psync_rand_2jobs_group", job: edit(base, func(j *Job) {
			j.Engine, j.Random, j.Workers, j.MinTime = "pread", true, 2, 300*time.Millisecond
		})},
		{name: "psync_seq_2jobs_nogroup", job: edit(base, func(j *Job) { j.Engine = "pread"; j.Workers = 2 }), drop: "--group_reporting"},
		{name: "psync_warning", job: edit(base, func(j *Job) { j.Engine = "pread" }), extra: []string{"--iodepth=8"}},
		{name: "psync_direct_einval", job: edit(base, func(j *Job) { j.Engine = "pread"; j.BlockSize = 1000; j.Direct = true }), fails: true},
		// Write twins, over the same file (it keeps its size).
		{name: "psync_write_fdatasync4", job: edit(base, func(j *Job) {
			j.Engine, j.Write, j.Sync, j.SyncEvery = "pwrite", true, SyncEvery, 4
		})},
		{name: "io_uring_write_direct", job: edit(base, func(j *Job) {
			j.Engine, j.Write, j.Direct, j.BlockSize = "io_uring", true, true, 64<<10
		})},
	}
	for _, r := range recs {
		if which != "1" && !slices.Contains(strings.Split(which, ","), r.name) {
			continue
		}
		args, err := r.job.Args()
		if err != nil {
			t.Fatal(err)
		}
		args = slices.DeleteFunc(append(args, r.extra...), func(a string) bool { return a == r.drop })
		var out bytes.Buffer
		cmd := exec.Command(info.Path, args...)
		cmd.Stdout = &out
		err = cmd.Run()
		if (err != nil) != r.fails {
			t.Fatalf("%s: fio %v: %v", r.name, args, err)
		}
		if err := os.WriteFile(filepath.Join("testdata", r.name+".json"), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
