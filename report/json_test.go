package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/iopath/iopath/netio/netresult"
)

// TestLoadNetJSONVersions: a net bench report of schema version 1
// (testdata/net/report.v1.json is netSample() as version 1 wrote it, kept
// as it was) loads as the current version writes it.
func TestLoadNetJSONVersions(t *testing.T) {
	var b bytes.Buffer
	if err := NetJSON(&b, netSample()); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b.Bytes(), []byte("{\n  \"schema_version\": 2,\n  \"kind\": \"net-echo\",\n")) {
		t.Errorf("NetJSON does not start with schema_version and kind:\n%.200s", b.String())
	}
	path := filepath.Join(t.TempDir(), "cur.json")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cur, err := LoadNetJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := LoadNetJSON(filepath.Join("testdata", "net", "report.v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v1.SchemaVersion != netresult.EchoSchemaVersion || v1.Machine.PageSize != 4096 || !reflect.DeepEqual(v1, cur) {
		a, _ := json.Marshal(v1)
		c, _ := json.Marshal(cur)
		t.Errorf("version 1 loads as\n%s\nwant\n%s", a, c)
	}
}

// TestKindJSONGolden: the JSON of the kinds without a golden of their own
// elsewhere, each read by eye when it changes.
func TestKindJSONGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"file-serve", func(b *bytes.Buffer) error { return FileServeJSON(b, fileServeReport(fileServeFixture())) }},
		{"writev", func(b *bytes.Buffer) error { return WritevJSON(b, writevReport(writevFixture())) }},
		{"compare", func(b *bytes.Buffer) error {
			old, cur := compareReports()
			return WriteCompare(b, "json", compareBench(t, old, cur), DocOptions{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			version := map[string]int{"file-serve": netresult.FileServeSchemaVersion, "writev": netresult.WritevSchemaVersion,
				"compare": CompareSchemaVersion}[tc.name]
			want := "{\n  \"schema_version\": " + strconv.Itoa(version) + ",\n  \"kind\": \"" + tc.name + "\",\n"
			if !json.Valid(b.Bytes()) || !strings.HasPrefix(b.String(), want) {
				t.Errorf("not JSON starting with schema_version and kind:\n%.300s", b.String())
			}
			golden(t, tc.name+".golden.json", b.Bytes())
		})
	}
}
