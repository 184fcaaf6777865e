package iopath_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"syscall"

	"github.com/iopath/iopath"
)

func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.json")

	// A new file gets WithPerm's mode (0o644 without it; the umask does
	// not apply).
	if err := iopath.WriteFile(path, []byte(`{"version": 1}`), iopath.WithPerm(0o600)); err != nil {
		log.Fatal(err)
	}
	// Replacing it: a reader, or the machine after a crash, sees the old
	// file or the new one, whole. The old file's mode is kept.
	if err := iopath.WriteFile(path, []byte(`{"version": 2}`)); err != nil {
		log.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(data), st.Mode())

	// A failure leaves the old file as it was and nothing beside it.
	err = iopath.WriteFile(dir, []byte("x"))
	fmt.Println(errors.Is(err, syscall.EISDIR))
	ents, _ := os.ReadDir(dir)
	fmt.Println(len(ents), "file in the directory")
	// Output:
	// {"version": 2} -rw-------
	// true
	// 1 file in the directory
}

func ExamplePlan_writeFile() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	c, err := iopath.Plan(filepath.Join(dir, "state"), iopath.ForWriteFile)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Engine, c.Rule)

	_, err = iopath.Plan(filepath.Join(dir, "missing", "state"), iopath.ForWriteFile)
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	// Output:
	// write write-file
	// true
}
