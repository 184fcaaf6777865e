package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/netns"

	"github.com/iopath/iopath/perf/perftest"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/netio"
	"github.com/iopath/iopath/netio/netresult"
	"github.com/iopath/iopath/perf"
)

// schemaDir holds one schema per kind, <kind>.schema.json, and the
// definitions they share, common.schema.json.
var schemaDir = filepath.Join("..", "..", "docs", "schema")

// schemaID is the $id of a kind's schema.
func schemaID(kind string) string {
	return "https://github.com/iopath/iopath/docs/schema/" + kind + ".schema.json"
}

// compileSchema compiles the schema of kind with every schema file of
// docs/schema added under its $id, so that the references between them
// resolve here and not over the network.
func compileSchema(t *testing.T, kind string) *jsonschema.Schema {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.schema.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", schemaDir, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if want := schemaID(strings.TrimSuffix(filepath.Base(f), ".schema.json")); id != want {
			t.Fatalf("%s: $id %q, want %q", f, id, want)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	sch, err := c.Compile(schemaID(kind))
	if err != nil {
		t.Fatalf("schema %s: %v", kind, err)
	}
	return sch
}

// validate checks data, a command's JSON output, against the schema of
// kind, and that it begins with schema_version and kind, in that order.
func validate(t *testing.T, kind string, data []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	var first []string
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		for len(first) < 2 && dec.More() {
			k, err := dec.Token()
			if err != nil {
				break
			}
			first = append(first, fmt.Sprint(k))
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				break
			}
		}
	}
	if !slices.Equal(first, []string{"schema_version", "kind"}) {
		t.Errorf("%s: the first keys are %q, want schema_version and kind", kind, first)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, data)
	}
	if err := compileSchema(t, kind).Validate(v); err != nil {
		t.Errorf("output does not match %s.schema.json: %v\n%s", kind, err, data)
	}
}

// cli runs the command in this process and returns its stdout.
func cli(t *testing.T, args ...string) []byte {
	t.Helper()
	out, errOut, code := runCLI(args...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return []byte(out)
}

// cliProcess runs the command as its own process (for commands whose
// children are this binary) and returns its stdout.
func cliProcess(t *testing.T, args ...string) []byte {
	t.Helper()
	out, errOut, code := runCLIProcess(t, nil, args...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return []byte(out)
}

// TestSchemas: each command's JSON matches its kind's schema in
// docs/schema. Every run is the smallest that makes each kind of row.
func TestSchemas(t *testing.T) {
	for _, off := range []string{"", "1"} {
		t.Run("features"+off, func(t *testing.T) {
			t.Setenv(features.DisableEnv, off)
			var out, errb bytes.Buffer
			if err := run(context.Background(), []string{"features", "--format", "json"}, nil, &out, &errb); err != nil {
				t.Fatalf("%v: %s", err, errb.String())
			}
			validate(t, "features", out.Bytes())
		})
	}
	t.Run("net-load", func(t *testing.T) {
		s, err := netio.Listen("epoll", netio.Config{Loops: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, mode := range []string{"pingpong", "stream", "pipeline:4"} {
			validate(t, "net-load", cli(t, "net", "load", "--addr", s.Addr().String(), "--conns", "2",
				"--duration", "100ms", "--warmup", "0s", "--mode", mode, "--format", "json"))
		}
		// What --timeline, --reset and --refusals add.
		limited, err := netio.Listen("epoll", netio.Config{Loops: 1, MaxConns: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer limited.Close()
		out := cli(t, "net", "load", "--addr", limited.Addr().String(), "--conns", "6", "--duration", "200ms", "--warmup", "0s",
			"--timeline", "50ms", "--refusals", "--format", "json")
		out2 := cli(t, "net", "load", "--addr", s.Addr().String(), "--conns", "6", "--duration", "200ms", "--warmup", "0s",
			"--reset", "34%", "--format", "json")
		for _, o := range [][]byte{out, out2} {
			validate(t, "net-load", o)
		}
		for _, key := range []string{`"timeline":`, `"refused_conns": 3`, `"window_start_ns":`} {
			if !strings.Contains(string(out), key) {
				t.Errorf("no %s in\n%s", key, out)
			}
		}
		if !strings.Contains(string(out2), `"resets": 2`) {
			t.Errorf("no \"resets\": 2 in\n%s", out2)
		}
	})

	var file, file2 []byte
	t.Run("file", func(t *testing.T) {
		path := benchFile(t, 1<<20)
		// A row of each kind: measured, and not applicable (mmap with
		// O_DIRECT).
		file = cli(t, "bench", path, "--runs", "2", "--min-time", "0", "--cache", "warm,direct", "--engines", "pread,mmap", "--format", "json")
		validate(t, "file", file)
		file2 = cli(t, "bench", path, "--runs", "1", "--min-time", "0", "--cache", "warm", "--engines", "pread", "--format", "json")
		validate(t, "file", file2)
		// Writes: every writer, a not applicable row (mmap appends), syncs.
		validate(t, "file", cli(t, "bench", "--rw", "append", "--size", "1MiB", "--runs", "1", "--sync", "every:4",
			"--dir", t.TempDir(), "--format", "json"))
	})
	t.Run("compare", func(t *testing.T) {
		if file == nil || file2 == nil {
			t.Skip("no bench reports to compare: the file test failed")
		}
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
		if os.WriteFile(a, file, 0o644) != nil || os.WriteFile(b, file2, 0o644) != nil {
			t.Fatal("cannot write the reports")
		}
		validate(t, "compare", cli(t, "compare", a, b, "--format", "json"))
	})
	t.Run("tree", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "tree")
		cli(t, "gen", "--tree", dir, "--files", "40", "--size", "1KiB")
		validate(t, "tree", cli(t, "bench", "--tree", dir, "--runs", "1", "--min-time", "0", "--cache", "warm",
			"--engines", strings.Join(batch.Names(), ","), "--format", "json"))
	})
	t.Run("perf", func(t *testing.T) {
		// --perf adds a breakdown per run and row, each run's recording
		// and a row's call tree (recursive), and --trace a trace per run.
		perftest.Need(t)
		file := cli(t, "bench", benchFile(t, 1<<20), "--runs", "1", "--min-time", "50ms", "--cache", "warm", "--engines", "pread",
			"--perf", filepath.Join(t.TempDir(), "perf"), "--trace", filepath.Join(t.TempDir(), "trace"), "--format", "json")
		validate(t, "file", file)
		for _, key := range []string{`"perf":`, `"perf_profile":`, `"flame":`, `"children":`, `"trace":`, `"runtime":`} {
			if !bytes.Contains(file, []byte(key)) {
				t.Errorf("bench --perf --trace: no %s in the report", key)
			}
		}
		// The flame node is closed too.
		sch := compileSchema(t, "file")
		for _, tc := range []struct{ old, new string }{{`"kind": "`, `"kind": "x`}, {`"value":`, `"extra": 1, "value":`}} {
			i := bytes.Index(file, []byte(`"flame":`))
			if i < 0 || bytes.Index(file[i:], []byte(tc.old)) < 0 {
				t.Fatalf("no %s in the flame", tc.old)
			}
			j := i + bytes.Index(file[i:], []byte(tc.old))
			bad := slices.Concat(file[:j], []byte(tc.new), file[j+len(tc.old):])
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
			if err != nil {
				t.Fatal(err)
			}
			if sch.Validate(v) == nil {
				t.Errorf("a flame node with %s -> %s still validates", tc.old, tc.new)
			}
		}
		dir := filepath.Join(t.TempDir(), "tree")
		cli(t, "gen", "--tree", dir, "--files", "40", "--size", "1KiB")
		validate(t, "tree", cli(t, "bench", "--tree", dir, "--runs", "1", "--min-time", "50ms", "--cache", "warm",
			"--engines", "raw", "--perf", filepath.Join(t.TempDir(), "perf"), "--format", "json"))
	})
	t.Run("append", func(t *testing.T) {
		// Every method, a group commit of several writers.
		validate(t, "append", cli(t, "bench", "--append", "--writers", "1,4", "--duration", "100ms", "--runs", "1",
			"--dir", t.TempDir(), "--format", "json"))
	})
	t.Run("advise", func(t *testing.T) {
		dir := t.TempDir()
		cli(t, "gen", "--tree", filepath.Join(dir, "tree"), "--files", "40", "--size", "1KiB")
		validate(t, "advise", cli(t, "advise", filepath.Join(dir, "tree"), "--budget", "1s", "--format", "json"))
		path := benchFile(t, 1<<20)
		validate(t, "advise", cli(t, "advise", path, "--budget", "1s", "--format", "json"))
	})
	t.Run("net-echo", func(t *testing.T) {
		validate(t, "net-echo", cliProcess(t, "net", "bench", "--conns", "2", "--sizes", "64", "--modes", "pingpong",
			"--duration", "50ms", "--warmup", "0s", "--format", "json"))
	})
	t.Run("net-echo-overload", func(t *testing.T) {
		out := cliProcess(t, "net", "bench", "--conns", "8", "--max-conns", "4", "--reset", "25%", "--sizes", "64", "--modes", "pingpong",
			"--engines", "epoll", "--duration", "100ms", "--warmup", "0s", "--format", "json")
		validate(t, "net-echo", out)
		hb := cliProcess(t, "net", "bench", "--conns", "4", "--heartbeat", "100ms", "--sizes", "64", "--modes", "pingpong",
			"--engines", "epoll", "--duration", "300ms", "--warmup", "0s", "--format", "json")
		validate(t, "net-echo", hb)
		for _, field := range []string{`"heartbeat_ns":100000000`, `"server_rss_held_bytes":`, `"tcp_sockets_held":`} {
			if !strings.Contains(strings.Join(strings.Fields(string(hb)), ""), field) {
				t.Errorf("no %s in the --heartbeat JSON", field)
			}
		}
		for _, field := range []string{`"max_conns":4`, `"refused_conns":4`, `"server_fds_before":`, `"server_rss_after_bytes":`} {
			if !strings.Contains(strings.Join(strings.Fields(string(out)), ""), field) {
				t.Errorf("no %s in the JSON", field)
			}
		}
	})
	t.Run("net-echo-loss", func(t *testing.T) {
		if err := netns.Check(); err != nil {
			t.Skipf("--loss: %v", err)
		}
		out := cliProcess(t, "net", "bench", "--conns", "2", "--sizes", "64", "--modes", "pingpong", "--engines", "epoll",
			"--duration", "100ms", "--warmup", "0s", "--loss", "0,5%", "--format", "json")
		validate(t, "net-echo", out)
		for _, field := range []string{`"loss":[0,0.05]`, `"rto_max_ms":1000`, `"loss_set":true`, `"retransmits":`} {
			if !strings.Contains(strings.Join(strings.Fields(string(out)), ""), field) {
				t.Errorf("no %s in the --loss JSON", field)
			}
		}
	})
	t.Run("file-serve", func(t *testing.T) {
		validate(t, "file-serve", cliProcess(t, "net", "bench", "--serve-file", "--file-sizes", "4KiB", "--runs", "1",
			"--duration", "50ms", "--format", "json"))
	})
	t.Run("writev", func(t *testing.T) {
		validate(t, "writev", cliProcess(t, "net", "bench", "--writev", "--parts", "1,4", "--runs", "1",
			"--duration", "50ms", "--format", "json"))
	})
}

// TestSchemaGoldens: the JSON goldens of package report, which cover
// what a short run does not make (several runs, a failed row, a
// skipped method), match their kinds' schemas.
func TestSchemaGoldens(t *testing.T) {
	for _, kind := range []string{"file-serve", "writev", "append"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "report", "testdata", kind+".golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		validate(t, kind, b)
	}
}

// TestSchemasReject: the schemas are not vacuous. A report with one key
// renamed, one key missing, a key added, a wrong kind or an unknown
// engine does not validate; the report itself does.
func TestSchemasReject(t *testing.T) {
	var b bytes.Buffer
	if err := run(context.Background(), []string{"bench", benchFile(t, 1<<16), "--runs", "1", "--min-time", "0",
		"--cache", "warm", "--engines", "pread", "--format", "json"}, nil, &b, &b); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	good := b.String()
	sch := compileSchema(t, "file")
	check := func(doc string) error {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		return sch.Validate(v)
	}
	if err := check(good); err != nil {
		t.Fatalf("the report itself does not validate: %v", err)
	}
	for _, tc := range []struct{ name, old, new string }{
		{"renamed", `"bs_bytes":`, `"bs":`},
		{"renamed in a run", `"resident_before_frac":`, `"resident_before":`},
		{"renamed in machine", `"page_size_bytes":`, `"page_size":`},
		{"added", `"tool": "iopath",`, `"tool": "iopath", "extra": 1,`},
		{"missing", `"command":`, `"command_line":`},
		{"kind", `"kind": "file"`, `"kind": "tree"`},
		{"version", `"schema_version": 3`, `"schema_version": 2`},
		{"engine", `"engine": "pread"`, `"engine": "preadx"`},
		{"negative", `"bs_bytes": `, `"bs_bytes": -`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.old) {
				t.Fatalf("the report has no %s", tc.old)
			}
			if err := check(strings.Replace(good, tc.old, tc.new, 1)); err == nil {
				t.Errorf("%s -> %s: still valid", tc.old, tc.new)
			}
		})
	}
}

// TestSchemaEnums: the closed lists in the schemas are the registries'
// own, so that a new engine, method or way is a schema change too.
func TestSchemaEnums(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(schemaDir, "common.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var common struct {
		Defs map[string]struct {
			Enum []string `json:"enum"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &common); err != nil {
		t.Fatal(err)
	}
	enumOf := func(file string, path ...string) []string {
		b, err := os.ReadFile(filepath.Join(schemaDir, file))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		var out []string
		for _, s := range v.(map[string]any)["enum"].([]any) {
			out = append(out, s.(string))
		}
		return out
	}
	item := []string{"properties", "results", "items", "properties"}
	for _, tc := range []struct {
		what      string
		got, want []string
	}{
		{"file engines", common.Defs["file_engine"].Enum, unique(append(engine.Names(), engine.WriterNames()...))},
		{"tree engines", common.Defs["tree_engine"].Enum, batch.Names()},
		{"append methods", common.Defs["append_method"].Enum, bench.AppendMethods()},
		{"net engines", common.Defs["net_engine"].Enum, netio.Engines()},
		{"file-serve methods", enumOf("file-serve.schema.json", append(item, "method")...), netresult.FileServeMethods()},
		{"writev ways", enumOf("writev.schema.json", append(item, "way")...), netresult.WritevWays()},
		{"perf kinds", common.Defs["perf_kind"].Enum, perfKindNames()},
		{"net perf kinds", enumOf("net-echo.schema.json", "$defs", "flame", "properties", "kind"), perfKindNames()},
		{"caches", common.Defs["cache"].Enum, []string{string(bench.Warm), string(bench.Cold), string(bench.Direct)}},
	} {
		got, want := slices.Sorted(slices.Values(tc.got)), slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s: the schema says %q, the code %q", tc.what, got, want)
		}
	}
}

// perfKindNames are perf.Kinds' JSON names.
func perfKindNames() []string {
	var out []string
	for _, k := range perf.Kinds() {
		out = append(out, k.String())
	}
	return out
}

// unique returns names without repeats, in order.
func unique(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
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
