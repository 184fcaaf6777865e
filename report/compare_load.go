package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
)

// compareKinds are the kinds of report compare reads, each with how to
// make one ready: decode it and map it into its Doc, whose headline
// columns are compared.
var compareKinds = map[string]func(path string, data []byte) (compared, error){
	"file":                  loadBenchCompared,
	"tree":                  loadBenchCompared,
	netresult.EchoKind:      loadNetCompared,
	netresult.FileServeKind: loadFileServeCompared,
	netresult.WritevKind:    loadWritevCompared,
}

// CompareKinds lists the kinds of report compare reads.
func CompareKinds() []string {
	var ks []string
	for k := range compareKinds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// CompareFiles reads two JSON reports of one kind and compares them. Its
// errors are one line and name the path at fault.
func CompareFiles(oldPath, newPath string) (*Comparison, error) {
	old, err := loadCompared(oldPath)
	if err != nil {
		return nil, err
	}
	nw, err := loadCompared(newPath)
	if err != nil {
		return nil, err
	}
	if old.src.Kind != nw.src.Kind {
		return nil, fmt.Errorf("%s is a %s report and %s a %s report: compare takes two of one kind", oldPath, old.src.Kind, newPath, nw.src.Kind)
	}
	old.src.Path, nw.src.Path = oldPath, newPath
	return compare(old, nw), nil
}

// loadCompared reads path, tells its kind and hands it to that kind's
// loader.
func loadCompared(path string) (compared, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return compared{}, fmt.Errorf("%s: %w", path, err)
	}
	const want = "want the JSON of iopath bench, bench --tree, net bench, net bench --serve-file or --writev"
	if len(bytes.TrimSpace(data)) == 0 {
		return compared{}, fmt.Errorf("%s: empty file, not an iopath JSON report (%s)", path, want)
	}
	var probe struct {
		Kind string          `json:"kind"`
		Tool string          `json:"tool"`
		Tree json.RawMessage `json:"tree"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return compared{}, fmt.Errorf("%s: not JSON (%v at byte %d)", path, se, se.Offset)
		}
		return compared{}, fmt.Errorf("%s: not an iopath report (JSON, but not an object; %s)", path, want)
	}
	kind := probe.Kind
	if kind == "" {
		// Reports from before "kind" was written.
		switch {
		case probe.Tool == bench.ToolIopath && len(probe.Tree) > 0 && string(probe.Tree) != "null":
			kind = "tree"
		case probe.Tool == bench.ToolIopath:
			kind = "file"
		case probe.Tool == netTool:
			kind = "net-echo"
		default:
			return compared{}, fmt.Errorf("%s: not an iopath report (no \"kind\", and its \"tool\" is %q; %s)", path, probe.Tool, want)
		}
	}
	load, ok := compareKinds[kind]
	if !ok {
		return compared{}, fmt.Errorf("%s: compare does not read %s reports (it reads %s)", path, kind, strings.Join(CompareKinds(), ", "))
	}
	c, err := load(path, data)
	if err != nil {
		return compared{}, err
	}
	c.src.Kind = kind
	return c, nil
}

func loadBenchCompared(path string, data []byte) (compared, error) {
	r, err := decodeBench(path, data)
	if err != nil {
		return compared{}, err
	}
	src := CompareSource{SchemaVersion: r.SchemaVersion, Command: r.Command, Started: r.Started,
		Machine: r.Machine, Interrupted: r.Interrupted}
	if r.Tree != nil {
		t := r.Tree
		if !t.Temporary {
			src.Props = append(src.Props, Field{"tree", units.QuotePath(t.Dir)})
		}
		src.Props = append(src.Props, Field{"files", fmt.Sprintf("%d files, %s", t.Files, units.FormatSize(t.Bytes))})
		if t.Archive != "" {
			src.Props = append(src.Props, Field{"archive", t.Archive})
		}
	} else {
		if !r.File.Temporary {
			// A temporary file has a made-up name: only its size matters.
			src.Props = append(src.Props, Field{"file", units.QuotePath(r.File.Path)})
		}
		src.Props = append(src.Props, Field{"file size", units.FormatSize(r.File.SizeBytes)})
	}
	if r.Fio != nil {
		src.Props = append(src.Props, Field{"fio version", r.Fio.Version})
	}
	return compared{doc: BenchDoc(r), src: src}, nil
}

// LoadJSON reads a report written by `iopath bench --format json` (the
// kinds "file" and "tree"), of this schema_version or an older one, whose
// keys it renames (benchRenames) and whose figures bench.Upgrade brings up
// to date. Its errors are one line and name path: the file is missing or
// unreadable, is not JSON, is JSON but not an iopath report, or has a
// schema_version newer than this iopath knows (then the fix is to upgrade
// iopath).
func LoadJSON(path string) (*bench.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file, not an iopath JSON report", path)
	}
	return decodeBench(path, data)
}

// decodeBench decodes data, read from path, as a report of iopath bench
// (see LoadJSON).
func decodeBench(path string, data []byte) (*bench.Report, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s: not JSON (%v at byte %d)", path, se, se.Offset)
		}
		return nil, fmt.Errorf("%s: not an iopath report (JSON, but not an object)", path)
	}
	const want = "want the output of iopath bench --format json"
	var tool string
	if raw, ok := probe["tool"]; !ok || json.Unmarshal(raw, &tool) != nil || tool != bench.ToolIopath {
		return nil, fmt.Errorf("%s: not an iopath report (its \"tool\" is not \"iopath\"; %s)", path, want)
	}
	var version int
	raw, ok := probe["schema_version"]
	if !ok {
		return nil, fmt.Errorf("%s: not an iopath report (no schema_version; %s)", path, want)
	}
	if err := json.Unmarshal(raw, &version); err != nil || version < 1 {
		return nil, fmt.Errorf("%s: not an iopath report (schema_version %s is not a positive whole number)", path, oneLine(string(raw)))
	}
	if version > bench.SchemaVersion {
		return nil, fmt.Errorf("%s: report schema_version %d is newer than this iopath reads (%d); upgrade iopath", path, version, bench.SchemaVersion)
	}
	if version < 3 {
		// Versions 1 and 2 had keys without their units: rename them.
		var err error
		if data, err = benchRenames.rename(data); err != nil {
			return nil, fmt.Errorf("%s: not a valid iopath report: %v", path, oneLine(err.Error()))
		}
	} else {
		var kind string
		if raw, ok := probe["kind"]; !ok || json.Unmarshal(raw, &kind) != nil || (kind != bench.KindFile && kind != bench.KindTree) {
			return nil, fmt.Errorf("%s: not an iopath bench report (its \"kind\" is not %q or %q; %s)", path, bench.KindFile, bench.KindTree, want)
		}
	}
	var r bench.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a valid iopath report: %v", path, oneLine(err.Error()))
	}
	r.SchemaVersion = version
	if err := bench.Upgrade(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

func loadNetCompared(path string, data []byte) (compared, error) {
	r, err := decodeNet(path, data)
	if err != nil {
		return compared{}, err
	}
	c := r.Config
	src := CompareSource{SchemaVersion: r.SchemaVersion, Command: r.Command, Started: r.Started, Machine: r.Machine,
		Props: []Field{{"duration", time.Duration(c.DurationNs).String()}, {"server CPUs", netCPUList(c.ServerCPUs)}, {"client CPUs", netCPUList(c.ClientCPUs)}}}
	return compared{doc: NetDoc(r), src: src}, nil
}

// loadFileServeCompared: two file-serving reports should have served the
// same file sizes over as many connections, each run as long.
func loadFileServeCompared(path string, data []byte) (compared, error) {
	r := &netresult.FileServeReport{}
	v, err := decodeSide(path, data, netresult.FileServeKind, netresult.FileServeSchemaVersion, r)
	if err != nil {
		return compared{}, err
	}
	r.SchemaVersion = v
	src := CompareSource{SchemaVersion: v, Command: r.Command, Started: r.Started, Machine: r.Machine}
	var sizes, conns []string
	for _, x := range nfFileRows(r.Results) {
		if s := units.FormatSize(x.FileSize); !slices.Contains(sizes, s) {
			sizes = append(sizes, s)
		}
		if c := strconv.Itoa(x.Conns); !slices.Contains(conns, c) {
			conns = append(conns, c)
		}
	}
	src.Props = append(src.Props, Field{"file sizes", strings.Join(sizes, ", ")}, Field{"connections", strings.Join(conns, ", ")})
	if d := r.Config.DurationNs; d > 0 {
		src.Props = append(src.Props, Field{"duration", time.Duration(d).String()})
	}
	if c := r.Config; len(c.ServerCPUs) > 0 || len(c.ClientCPUs) > 0 {
		src.Props = append(src.Props, Field{"server CPUs", netCPUList(c.ServerCPUs)}, Field{"client CPUs", netCPUList(c.ClientCPUs)})
	}
	return compared{doc: FileServeDoc(r), src: src}, nil
}

// loadWritevCompared: two writev reports should have sent responses of
// the same part counts and sizes, as many per run.
func loadWritevCompared(path string, data []byte) (compared, error) {
	r := &netresult.WritevReport{}
	v, err := decodeSide(path, data, netresult.WritevKind, netresult.WritevSchemaVersion, r)
	if err != nil {
		return compared{}, err
	}
	r.SchemaVersion = v
	src := CompareSource{SchemaVersion: v, Command: r.Command, Started: r.Started, Machine: r.Machine}
	var parts []string
	for _, x := range nfWritevRows(r.Results) {
		if p := fmt.Sprintf("%d (%d B)", x.K, x.RespBytes); x.RespBytes > 0 && !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	src.Props = append(src.Props, Field{"parts", strings.Join(parts, ", ")})
	if c := r.Config; c.MaxPartBytes > 0 {
		src.Props = append(src.Props, Field{"part sizes", fmt.Sprintf("%d–%d B", c.MinPartBytes, c.MaxPartBytes)})
		if c.DurationNs > 0 {
			src.Props = append(src.Props, Field{"per run", time.Duration(c.DurationNs).String()})
		} else {
			src.Props = append(src.Props, Field{"per run", fmt.Sprintf("%d responses", c.Responses)})
		}
	}
	return compared{doc: WritevDoc(r), src: src}, nil
}
