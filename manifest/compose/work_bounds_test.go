package compose_test

// A load's work is bounded (promise 3): port ranges, the YAML documents
// of a file, the files extended, read, hashed and listed, and the loads of
// included files each have a bound, checked before the work it bounds.

import (
	"context"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/manifest/project"
)

// TestPortRangeCappedLikeExpose (promise 3, bounded work): ports ranges
// are capped as expose ranges are (1000 ports). Uncapped, one 67-byte line
// was 65535 ports per replica (with scale: 100 the helper held 1.5 GB and
// answered 378 MB of JSON).
func TestPortRangeCappedLikeExpose(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": "services:\n  web: {image: busybox, ports: ['1-65535:1-65535']}\n"}, compose.Options{})
	n := 0
	for _, p := range pods {
		n += len(p.Manifest.Containers[0].Ports)
	}
	if n > 1001 {
		t.Errorf("one port line became %d ports (expose is capped at 1000); errors %q", n, errs)
	}
}

// TestPortRangesRefusedBeforeCompose: ranges that span more than
// MaxPorts ports, as written, are refused before compose-go expands them
// port by port (a 62-byte line cost it seconds, past the fuzzer's 10 s
// per input under its instrumentation); ranges within the bound load.
func TestPortRangesRefusedBeforeCompose(t *testing.T) {
	tests := []struct{ ports, want string }{
		{"['1-65535:1-65535']", `apps:shop/compose.yaml: service "web": its ports ranges span 65535 ports, over the limit of 1000`},
		{"['127.0.0.1:2000-2600:2000-2600', '3000-3500:3000-3500/udp']", `apps:shop/compose.yaml: service "web": its ports ranges span 1102 ports, over the limit of 1000`},
		{"[{target: 80, published: '8000-9100'}]", `apps:shop/compose.yaml: service "web": its ports ranges span 1101 ports, over the limit of 1000`},
		{"['8000-8010:8000-8010', '9000:90']", ""},
	}
	for _, tt := range tests {
		pods, errs := load(t, mapFiles{"compose.yaml": "services:\n  web: {image: busybox, ports: " + tt.ports + "}\n"}, compose.Options{})
		switch {
		case tt.want == "" && (len(errs) > 0 || len(pods) != 1 || len(pods[0].Manifest.Containers[0].Ports) != 12):
			t.Errorf("%s: pods %d, errors %q; want the 12 ports", tt.ports, len(pods), errs)
		case tt.want != "" && !slices.Contains(errs, tt.want):
			t.Errorf("%s: errors %q, want %q", tt.ports, errs, tt.want)
		}
	}
}

// TestFileOfTooManyDocumentsRefused (promise 3, bounded CPU): compose-go
// validates and merges the whole model once per YAML document (n tiny
// documents cost O(n^2): 800 took 23 s), so a file of more than
// MaxDocuments documents is refused before it runs.
func TestFileOfTooManyDocumentsRefused(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "services:\n  s%d:\n    image: x\n    profiles: [off]\n", i)
	}
	pods, errs := load(t, mapFiles{"compose.yaml": b.String()}, compose.Options{})
	want := []string{fmt.Sprintf("apps:shop/compose.yaml: more than %d YAML documents in one Compose file", compose.MaxDocuments)}
	if len(pods) != 0 || !slices.Equal(errs, want) {
		t.Errorf("pods %d, errors %q; want %q", len(pods), errs, want)
	}
}

// TestExtendedFileDocumentsAreBounded: one Compose file holds at most
// MaxDocuments YAML documents (compose-go merges the whole model once per
// document), an extended one too, wherever it is. rebaseExtends counted
// documents only for a file in a sub-folder: an extended file at the
// project's root was handed over as it is, with any number of them (2000
// tiny documents, 67 KB, take compose-go ~30 s; the cost is quadratic,
// and 64 references multiply it).
func TestExtendedFileDocumentsAreBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 3*compose.MaxDocuments; i++ {
		fmt.Fprintf(&b, "---\nservices: {s%d: {image: busybox}}\n", i)
	}
	for _, name := range []string{"base.yaml", "sub/base.yaml"} {
		t.Run(name, func(t *testing.T) {
			files := mapFiles{
				"compose.yaml": "services:\n  web:\n    extends: {file: " + name + ", service: s0}\n",
				name:           b.String(),
			}
			_, errs := load(t, files, compose.Options{})
			if !strings.Contains(strings.Join(errs, "\n"), fmt.Sprintf("more than %d YAML documents", compose.MaxDocuments)) {
				t.Errorf("%s with %d documents extended; errors %q, want the documents' bound", name, 3*compose.MaxDocuments, errs)
			}
		})
	}
}

// TestOneFileExtendedByManyServicesIsReadOnce: MaxReferencedFiles bounds
// the files one load reads, each file once. With a fresh memfd for every
// reference, the same file counted (and was read, copied, parsed,
// interpolated) once per service extending it, and compose-go's extends
// cache (keyed by the path the loader returns) never hit: 65 services
// extending one common file were refused, and a 302-byte file extended by
// 64 services cost 64 parses (measured: 6.9 GB allocated, 8.7 s, against
// 114 MB for one).
func TestOneFileExtendedByManyServicesIsReadOnce(t *testing.T) {
	var c strings.Builder
	c.WriteString("services:\n")
	for i := 0; i <= compose.MaxReferencedFiles; i++ {
		fmt.Fprintf(&c, "  s%d: {extends: {file: common.yaml, service: base}}\n", i)
	}
	files := mapFiles{"compose.yaml": c.String(), "common.yaml": "services:\n  base: {image: busybox}\n"}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 || len(pods) != compose.MaxReferencedFiles+1 {
		t.Errorf("%d services extending one file: %d pods, errors %q; want every pod (one file read)", compose.MaxReferencedFiles+1, len(pods), errs)
	}
}

// byteFiles is a project folder in memory holding []byte (no copy per
// read, as a project.Bundle), counting what the translation reads.
type byteFiles struct {
	files map[string][]byte
	reads int
	bytes int
}

func (b *byteFiles) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("%s: invalid name", name)
	}
	d, ok := b.files[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	b.reads++
	b.bytes += len(d)
	return d, nil
}

func (b *byteFiles) Names() []string {
	var out []string
	for n := range b.files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (b *byteFiles) Executable(string) bool { return false }

// loadByteFiles loads the project files as apps:shop.
func loadByteFiles(t *testing.T, files compose.Files) ([]manifest.Sourced, []string) {
	t.Helper()
	pods, err := compose.Load(context.Background(), files, compose.Options{Source: "apps", Dir: "shop"})
	return pods, errorTexts(t, pods, err)
}

// TestMountedFilesReadWithinTheProjectBound: the project bound
// (project.MaxBytes of mounted files, replicas counted) holds while the
// volumes are read. Checked only after every volume of a service was read
// and hashed, a few bytes of Compose per mount made the helper read and
// SHA-256 a whole 10 MiB file again, without bound but the 60 s timeout.
func TestMountedFilesReadWithinTheProjectBound(t *testing.T) {
	const mounts = 100 // 1000 bytes of Compose: 1 GiB hashed
	var vols []string
	for i := range mounts {
		vols = append(vols, fmt.Sprintf("'./big:/m%d'", i))
	}
	files := &byteFiles{files: map[string][]byte{
		"compose.yaml": []byte("services:\n  web: {image: busybox, volumes: [" + strings.Join(vols, ", ") + "]}\n"),
		"big":          make([]byte, manifest.MaxFileBytes),
	}}
	start := time.Now()
	_, errs := loadByteFiles(t, files)
	took := time.Since(start)
	if len(errs) == 0 {
		t.Fatal("no error for 1 GiB of mounted files")
	}
	if limit := project.MaxBytes + manifest.MaxFileBytes; files.bytes > limit {
		t.Errorf("the translation read (and hashed) %d MiB of files before refusing a project bounded at %d MiB (took %v)", files.bytes>>20, project.MaxBytes>>20, took)
	}
}

// TestFolderMountsBoundedBeforeTheirItems: the same for folders. Each
// mount of a folder of 1000 files builds 1000 items (and sorts every name
// of the project); before any bound applied, a Compose file of tens of
// KiB made the helper allocate without limit.
func TestFolderMountsBoundedBeforeTheirItems(t *testing.T) {
	const folderFiles, mounts = manifest.MaxFileItems, 2000
	m := map[string][]byte{}
	for i := range folderFiles {
		m[fmt.Sprintf("d/f%04d", i)] = []byte("x")
	}
	var vols strings.Builder
	for i := range mounts {
		fmt.Fprintf(&vols, "      - ./d:/m%d\n", i)
	}
	m["compose.yaml"] = []byte("services:\n  web:\n    image: busybox\n    volumes:\n" + vols.String())
	files := &byteFiles{files: m}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, errs := loadByteFiles(t, files)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes of Compose: %d reads, %d MiB allocated, %v, %d errors", len(m["compose.yaml"]), files.reads, alloc>>20, took, len(errs))
	if files.reads > 10*project.MaxFiles {
		t.Errorf("%d file reads (%d MiB allocated, %v) for a project of %d files: no bound on the files volumes of a service", files.reads, alloc>>20, took, len(m))
	}
}

// envChain is a chain of levels included files: each level includes
// width files in folders of their own, whose .env set a variable of that
// level, and which include the next level. Every route down the chain
// has its own environment, so compose-go's include cache (keyed by it)
// never hits: the last level is loaded width^levels times.
func envChain(levels, width int) mapFiles {
	var leaf strings.Builder
	leaf.WriteString("services:\n")
	for k := 0; k < 100; k++ {
		fmt.Fprintf(&leaf, "  leaf%d: {image: busybox}\n", k)
	}
	files := mapFiles{}
	for i := 0; i < levels; i++ {
		var inc []string
		for w := 0; w < width; w++ {
			d := fmt.Sprintf("b%d_%d", i, w)
			inc = append(inc, d+"/x.yaml")
			files[d+"/.env"] = fmt.Sprintf("A%d=%d\n", i, w)
			if i == levels-1 {
				files[d+"/x.yaml"] = leaf.String()
			} else {
				files[d+"/x.yaml"] = fmt.Sprintf("include: [../l%d.yaml]\n", i+1)
			}
		}
		body := "include: [" + strings.Join(inc, ", ") + "]\n"
		if i == 0 {
			files["compose.yaml"] = body + "services:\n  web: {image: busybox}\n"
		} else {
			files[fmt.Sprintf("l%d.yaml", i)] = body
		}
	}
	return files
}

// Promise (MaxReferenceLoads): a load's work is bounded by the loader's
// calls, not by the routes through the includes. With per-folder .env
// files every route down a chain has its own environment and compose-go
// loads the last level once per route, 2^levels times: unbounded, 45
// files (9 levels) took ~20 s and 60 files (12 levels) past a helper's
// 60 s timeout. A chain within the bound loads; a deeper one, however
// deep, is refused at the bound, naming it. (What the bound costs in time
// is BenchmarkIncludeEnvChain's.)
func TestIncludeRoutesAreBoundedByTheLoadersCalls(t *testing.T) {
	tests := []struct {
		levels  int
		wantErr string
	}{
		{4, ""},
		{8, fmt.Sprintf("more than %d loads of files referenced by extends.file and include", compose.MaxReferenceLoads)},
		{20, "files referenced by extends.file and include"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d levels", tt.levels), func(t *testing.T) {
			pods, errs := load(t, envChain(tt.levels, 2), compose.Options{})
			got := strings.Join(errs, "\n")
			switch {
			case tt.wantErr == "" && len(errs) > 0:
				t.Fatalf("errors %q, want the chain loaded", errs)
			case tt.wantErr == "" && len(pods) != 101:
				t.Fatalf("%d pods, want 101 (100 of the last level and web)", len(pods))
			case tt.wantErr != "" && !strings.Contains(got, tt.wantErr):
				t.Fatalf("errors %q, want one containing %q", errs, tt.wantErr)
			}
		})
	}
}

// BenchmarkIncludeEnvChain is what a chain of includes costs: within the
// loader's bound (4 levels, 30 loads) and cut at it (8 levels, 256 loads).
func BenchmarkIncludeEnvChain(b *testing.B) {
	for _, levels := range []int{4, 8} {
		files := envChain(levels, 2)
		b.Run(fmt.Sprintf("levels=%d", levels), func(b *testing.B) {
			for b.Loop() {
				_, _ = compose.Load(context.Background(), files, compose.Options{Source: "apps", Dir: "shop"})
			}
		})
	}
}
