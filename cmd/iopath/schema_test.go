package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/netio"
)

// validate checks data, a command's JSON output, against the schema in
// docs/schema/name.
func validate(t *testing.T, name string, data []byte) {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join("..", "..", "docs", "schema", name))
	if err != nil {
		t.Fatalf("schema %s: %v", name, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, data)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("output does not match %s: %v\n%s", name, err, data)
	}
}

// TestSchemas: each command's JSON matches its schema in docs/schema,
// with io_uring available and refused.
func TestSchemas(t *testing.T) {
	for _, off := range []string{"", "1"} {
		t.Run("features"+off, func(t *testing.T) {
			t.Setenv(features.DisableEnv, off)
			var out, errb bytes.Buffer
			if err := run(context.Background(), []string{"features", "--format", "json"}, nil, &out, &errb); err != nil {
				t.Fatalf("%v: %s", err, errb.String())
			}
			validate(t, "features.schema.json", out.Bytes())
		})
	}
	t.Run("net-load", func(t *testing.T) {
		s, err := netio.Listen("epoll", netio.Config{Loops: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, mode := range []string{"pingpong", "stream", "pipeline:4"} {
			var out, errb bytes.Buffer
			if err := run(context.Background(), []string{"net", "load", "--addr", s.Addr().String(), "--conns", "2",
				"--duration", "100ms", "--warmup", "0s", "--mode", mode, "--format", "json"}, nil, &out, &errb); err != nil {
				t.Fatalf("%s: %v: %s", mode, err, errb.String())
			}
			validate(t, "net-load.schema.json", out.Bytes())
		}
	})
}

// TestJSONBesideTable: --json writes the JSON of the run whose table is on
// stdout (one run, not two): the file's figures are the table's.
func TestJSONBesideTable(t *testing.T) {
	path := benchFile(t, 1<<20)
	js := filepath.Join(t.TempDir(), "r.json")
	out, errOut, code := runCLI("bench", path, "--runs", "1", "--cache", "warm", "--min-time", "0", "--engines", "pread", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Results) != 1 {
		t.Fatalf("the file is not one result's report (%v): %s", err, b)
	}
	gib := fmt.Sprintf("%.2f", rep.Results[0].BytesPerS/(1<<30))
	if !strings.Contains(out, "pread") || !strings.Contains(out, gib) {
		t.Errorf("the table on stdout does not show the file's %s GiB/s:\n%s", gib, out)
	}
	if !strings.Contains(errOut, "wrote "+js) {
		t.Errorf("stderr does not say the file was written: %q", errOut)
	}
	_, errOut, code = runCLI("bench", path, "--json", js, "--html", js, "--force")
	if code != 2 || !strings.Contains(errOut, "--json and --html name the same file") {
		t.Errorf("--json and --html on one file: exit %d, %q", code, errOut)
	}
}
