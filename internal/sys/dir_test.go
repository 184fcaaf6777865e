package sys

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestGetdentsDirents(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "bb", "ccc"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	fd, err := Open(dir, O_RDONLY|O_DIRECTORY)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	buf := make([]byte, 4096)
	got := map[string]uint8{}
	for {
		n, err := Getdents(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if !Dirents(buf[:n], func(name []byte, typ uint8) { got[string(name)] = typ }) {
			t.Fatal("Dirents rejected the kernel's records")
		}
	}
	want := map[string]uint8{"a": DT_REG, "bb": DT_REG, "ccc": DT_REG, "d": DT_DIR}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v (no . or ..)", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: type %d, want %d", k, got[k], v)
		}
	}
}

// record builds one linux_dirent64 record.
func record(name string, typ uint8) []byte {
	n := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint16(b[16:], uint16(n))
	b[18] = typ
	copy(b[19:], name)
	return b
}

func TestDirentsMalformed(t *testing.T) {
	good := slices.Concat(record("x", DT_REG), record(".", DT_DIR), record("..", DT_DIR))
	var names []string
	if !Dirents(good, func(name []byte, typ uint8) { names = append(names, string(name)) }) || len(names) != 1 || names[0] != "x" {
		t.Errorf("good records: %v", names)
	}
	short := record("y", DT_REG)
	binary.NativeEndian.PutUint16(short[16:], 4) // reclen below the header
	long := record("z", DT_REG)
	binary.NativeEndian.PutUint16(long[16:], 4096) // past the buffer
	for name, b := range map[string][]byte{"truncated header": good[:10], "reclen too small": short, "reclen past end": long} {
		if Dirents(b, func([]byte, uint8) {}) {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDirents(f *testing.F) {
	f.Add(slices.Concat(record("x", DT_REG), record("dir", DT_DIR)))
	f.Fuzz(func(t *testing.T, b []byte) {
		Dirents(b, func(name []byte, typ uint8) {
			if len(name) == 0 {
				t.Error("empty name handed out")
			}
		})
	})
}

func TestOpenZ(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("hi"), 0o644)
	fd, err := OpenZ(AT_FDCWD, append([]byte(p), 0), O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	Close(fd)
	if _, err := OpenZ(AT_FDCWD, []byte(p), O_RDONLY); err != EINVAL {
		t.Errorf("path without NUL: %v, want EINVAL", err)
	}
	if _, err := OpenZ(AT_FDCWD, append([]byte(p+"x"), 0), O_RDONLY); err != ENOENT {
		t.Errorf("missing file: %v, want ENOENT", err)
	}
}

func TestAppendPathZ(t *testing.T) {
	z, err := AppendPathZ(nil, "/a/b")
	if err != nil || string(z) != "/a/b\x00" {
		t.Errorf("AppendPathZ: %q, %v", z, err)
	}
	if _, err := AppendPathZ(nil, "/a\x00/b"); err != EINVAL {
		t.Errorf("a path with a NUL: %v, want EINVAL", err)
	}
}
