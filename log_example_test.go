package iopath_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/iopath/iopath"
)

func ExampleOpenLog() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "orders.wal")

	l, err := iopath.OpenLog(path) // creates it; after a crash, cuts a torn tail
	if err != nil {
		log.Fatal(err)
	}
	// Many goroutines append at once: each Append returns once its
	// record is on stable storage, and those waiting together share one
	// write and one fdatasync.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := l.Append(context.Background(), fmt.Appendf(nil, "order %d", i)); err != nil {
				log.Print(err) // the Log is unusable now: reopen it
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}

	// Reopened (as after a restart), it replays what it holds.
	l, err = iopath.OpenLog(path)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	n := 0
	err = l.Replay(func(rec []byte) error {
		n++ // rec is valid during this call only
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "records;", l.Stats().Truncated, "bytes of torn tail cut")
	// Output: 8 records; 0 bytes of torn tail cut
}

func ExampleReadLog() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "events.wal")
	l, err := iopath.OpenLog(path)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range []string{"created", "paid", "shipped"} {
		if err := l.Append(context.Background(), []byte(e)); err != nil {
			log.Fatal(err)
		}
	}
	l.Close()

	// ReadLog reads a log without opening it for appending: no lock, and
	// nothing truncated (a torn tail just ends the records).
	err = iopath.ReadLog(path, func(rec []byte) error {
		fmt.Println(string(rec))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// created
	// paid
	// shipped
}

func ExampleLog_Append() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l, err := iopath.OpenLog(filepath.Join(dir, "wal"))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	// A cancelled ctx before the record is queued: nothing is written.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(l.Append(ctx, []byte("never")))
	fmt.Println(l.Append(context.Background(), []byte("durable")), l.Stats().Records)
	// Output:
	// context canceled
	// <nil> 1
}
