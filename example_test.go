package iopath_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/iopath/iopath"
)

func Example_readFiles() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte("world!"), 0o644)

	var files, bytes atomic.Int64 // fn may be called concurrently
	err = iopath.ReadFiles(context.Background(), []string{dir}, func(path string, data []byte, err error) error {
		if err != nil {
			return err // stop at the first unreadable file
		}
		files.Add(1)
		bytes.Add(int64(len(data))) // data is valid only during this call
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(files.Load(), "files,", bytes.Load(), "bytes")
	// Output: 2 files, 11 bytes
}
