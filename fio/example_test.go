package fio_test

import (
	"fmt"
	"strings"

	"github.com/iopath/iopath/fio"
)

// The twin of iopath's pwrite engine writing a 1 GiB file in 128 KiB
// blocks with an fdatasync after every 4 blocks: it opens the file as it
// is (--create_on_open=1) and never creates it.
func ExampleJob_Args_write() {
	job := fio.Job{
		Path: "/data/file", FileSize: 1 << 30, Engine: "pwrite", Write: true,
		BlockSize: 128 << 10, Workers: 1, Sync: fio.SyncEvery, SyncEvery: 4,
	}
	args, err := job.Args()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Join(args, "\n"))
	// Output:
	// --name=psync
	// --filename=/data/file
	// --ioengine=psync
	// --rw=write
	// --bs=131072
	// --size=1073741824
	// --numjobs=1
	// --group_reporting
	// --iodepth=1
	// --fdatasync=4
	// --invalidate=0
	// --fadvise_hint=0
	// --create_on_open=1
	// --allow_file_create=0
	// --lat_percentiles=1
	// --percentile_list=50:90:99:99.9:99.99
	// --output-format=json
}

// iopath's append pattern has no fio twin; Args says why, and a bench
// shows the twin's row as not applicable.
func ExampleJob_Args_append() {
	job := fio.Job{
		Path: "/data/log", FileSize: 1 << 30, Engine: "pwrite", Write: true, Append: true,
		BlockSize: 4096, Workers: 1,
	}
	_, err := job.Args()
	fmt.Println(strings.SplitN(err.Error(), ":", 2)[0])
	// Output:
	// fio cannot append as iopath does
}
