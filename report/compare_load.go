package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/netresult"
)

// compareKinds are the kinds of report compare reads, each with how to
// make one ready: decode it and map it into its Doc, whose headline
// columns are compared.
var compareKinds = map[string]func(d *jsondoc.Doc) (compared, error){
	bench.KindFile:          loadBenchCompared,
	bench.KindTree:          loadBenchCompared,
	bench.KindAppend:        loadBenchCompared,
	netresult.EchoKind:      loadNetCompared,
	netresult.FileServeKind: loadFileServeCompared,
	netresult.WritevKind:    loadWritevCompared,
}

// CompareKinds lists the kinds of report compare reads.
func CompareKinds() []string {
	return slices.Sorted(maps.Keys(compareKinds))
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
		return nil, fmt.Errorf("%s is %s report and %s %s report: compare takes two of one kind", oldPath, article(old.src.Kind), newPath, article(nw.src.Kind))
	}
	old.src.Path, nw.src.Path = oldPath, newPath
	return compare(old, nw), nil
}

// loadCompared reads path, tells its kind and hands it to that kind's
// loader.
func loadCompared(path string) (compared, error) {
	data, err := readReport(path)
	if err != nil {
		return compared{}, err
	}
	d, err := jsondoc.Open(path, data, "iopath report",
		"want the JSON of iopath bench, bench --tree, bench --append, net bench, net bench --serve-file or --writev")
	if err != nil {
		return compared{}, err
	}
	kind := d.Str("kind")
	if kind == "" {
		// Reports from before "kind" was written.
		switch tool := d.Str("tool"); {
		case tool == bench.ToolIopath && d.Has("tree"):
			kind = bench.KindTree
		case tool == bench.ToolIopath:
			kind = bench.KindFile
		case tool == netTool:
			kind = netresult.EchoKind
		default:
			return compared{}, d.Errorf("no \"kind\", and its \"tool\" is %q", tool)
		}
	}
	load, ok := compareKinds[kind]
	if !ok {
		return compared{}, fmt.Errorf("%s: compare does not read %s reports (it reads %s)", path, kind, strings.Join(CompareKinds(), ", "))
	}
	c, err := load(d)
	c.src.Kind = kind
	return c, err
}

func loadBenchCompared(d *jsondoc.Doc) (compared, error) {
	r, err := decodeBench(d)
	if err != nil {
		return compared{}, err
	}
	src := CompareSource{SchemaVersion: r.SchemaVersion, Command: r.Command, Started: r.Started,
		Machine: r.Machine, Interrupted: r.Interrupted}
	if a := r.Append; a != nil {
		// Two append reports compare alike when they appended records
		// of one size for as long, on one kind of filesystem.
		src.Props = append(src.Props, Field{"record size", units.FormatSize(int64(a.RecordSizeBytes))},
			Field{"duration", time.Duration(a.DurationNs).String()}, Field{"filesystem", a.Filesystem})
	} else if r.Tree != nil {
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
		// A report of reads and one of writes share no row: say why.
		src.Props = append(src.Props, Field{"access", access(r.Results)})
	}
	if r.Fio != nil {
		src.Props = append(src.Props, Field{"fio version", r.Fio.Version})
	}
	return compared{doc: BenchDoc(r), src: src}, nil
}

// article puts "a" or "an" before kind ("an append").
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// access says whether a file report's rows read or write the file.
func access(rs []bench.Result) string {
	var reads, writes bool
	for _, r := range rs {
		if r.Sync != "" || r.Pattern == "write" || r.Pattern == "randwrite" || r.Pattern == "append" {
			writes = true
		} else {
			reads = true
		}
	}
	switch {
	case reads && writes:
		return "reads and writes"
	case writes:
		return "writes"
	}
	return "reads"
}

// decodeSide decodes d as a report of kind, `net bench --serve-file` or
// `--writev` (flag), into v and returns its schema_version. Version 1 (no
// per-run figures, no start time or config) decodes into the current
// types as it is.
func decodeSide(d *jsondoc.Doc, kind, flag string, current int, v any) (int, error) {
	d.Name, d.Want = "iopath "+kind+" report", "want the output of iopath net bench "+flag+" --format json"
	version, err := d.Version(current)
	if err != nil {
		return 0, err
	}
	return version, d.Decode(v, nil)
}

func loadNetCompared(d *jsondoc.Doc) (compared, error) {
	r, err := decodeNet(d)
	if err != nil {
		return compared{}, err
	}
	c := r.Config
	src := CompareSource{SchemaVersion: r.SchemaVersion, Command: r.Command, Started: r.Started, Machine: r.Machine,
		Props: []Field{{"duration", time.Duration(c.DurationNs).String()}, {"server CPUs", netCPUList(c.ServerCPUs)}, {"client CPUs", netCPUList(c.ClientCPUs)},
			{"server GOMAXPROCS", netProcs(c)}}}
	return compared{doc: NetDoc(r), src: src}, nil
}

// loadFileServeCompared: two file-serving reports should have served the
// same file sizes over as many connections, each run as long.
func loadFileServeCompared(d *jsondoc.Doc) (compared, error) {
	r := &netresult.FileServeReport{}
	v, err := decodeSide(d, netresult.FileServeKind, "--serve-file", netresult.FileServeSchemaVersion, r)
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
func loadWritevCompared(d *jsondoc.Doc) (compared, error) {
	r := &netresult.WritevReport{}
	v, err := decodeSide(d, netresult.WritevKind, "--writev", netresult.WritevSchemaVersion, r)
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
