package imagetar_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/imagetar"
)

// readTar returns the entries of a tar, in order, with their contents.
func readTar(t *testing.T, data []byte) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	var hdrs []*tar.Header
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hdrs, files
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		hdrs = append(hdrs, h)
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read %s: %v", h.Name, err)
		}
		files[h.Name] = b
	}
}

func TestWriteStructure(t *testing.T) {
	files := []imagetar.File{
		{Path: "/usr/bin/tool", Mode: 0o755, Data: []byte("#!tool")},
		{Path: "/demo", Mode: 0o755, Data: []byte("binary")},
		{Path: "/etc/greeting", Data: []byte("hi")},
	}
	var buf bytes.Buffer
	if err := imagetar.Write(&buf, "example.org:5000/team/demo:v1", files, []string{"/demo"}, []string{"A=1"}); err != nil {
		t.Fatal(err)
	}
	_, outer := readTar(t, buf.Bytes())

	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(outer["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || len(manifest[0].Layers) != 1 ||
		!slices.Equal(manifest[0].RepoTags, []string{"example.org:5000/team/demo:v1"}) {
		t.Fatalf("manifest = %+v", manifest)
	}
	m := manifest[0]
	cfgJSON, ok := outer[m.Config]
	if !ok {
		t.Fatalf("config %s missing from the archive", m.Config)
	}
	cfgSum := sha256.Sum256(cfgJSON)
	if m.Config != hex.EncodeToString(cfgSum[:])+".json" {
		t.Errorf("config file %s is not named by its sha256", m.Config)
	}
	layer, ok := outer[m.Layers[0]]
	if !ok {
		t.Fatalf("layer %s missing from the archive", m.Layers[0])
	}
	layerSum := sha256.Sum256(layer)
	layerHex := hex.EncodeToString(layerSum[:])

	var cfg struct {
		Architecture string
		OS           string
		Config       struct {
			Entrypoint []string
			Env        []string
		}
		RootFS struct {
			Type    string
			DiffIDs []string `json:"diff_ids"`
		}
	}
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.Architecture != goruntime.GOARCH || cfg.OS != "linux" {
		t.Errorf("platform = %s/%s", cfg.OS, cfg.Architecture)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/demo"}) ||
		!slices.Equal(cfg.Config.Env, []string{imagetar.DefaultPath, "A=1"}) {
		t.Errorf("config = %+v", cfg.Config)
	}
	if cfg.RootFS.Type != "layers" || !slices.Equal(cfg.RootFS.DiffIDs, []string{"sha256:" + layerHex}) {
		t.Errorf("rootfs = %+v, want the layer's sha256 sha256:%s", cfg.RootFS, layerHex)
	}

	var repos map[string]map[string]string
	if err := json.Unmarshal(outer["repositories"], &repos); err != nil {
		t.Fatalf("repositories: %v", err)
	}
	if repos["example.org:5000/team/demo"]["v1"] != strings.TrimSuffix(m.Layers[0], "/layer.tar") {
		t.Errorf("repositories = %v", repos)
	}

	hdrs, content := readTar(t, layer)
	var names []string
	modes := map[string]int64{}
	for _, h := range hdrs {
		names = append(names, h.Name)
		modes[h.Name] = h.Mode
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d, want root", h.Name, h.Uid, h.Gid)
		}
	}
	wantNames := []string{"etc/", "tmp/", "usr/", "usr/bin/", "demo", "etc/greeting", "usr/bin/tool"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("layer entries = %q, want %q", names, wantNames)
	}
	for name, want := range map[string]int64{"tmp/": 0o1777, "usr/": 0o755, "demo": 0o755, "etc/greeting": 0o644} {
		if modes[name] != want {
			t.Errorf("%s mode = %o, want %o", name, modes[name], want)
		}
	}
	if string(content["demo"]) != "binary" || string(content["etc/greeting"]) != "hi" {
		t.Errorf("file contents = %q", content)
	}

	// Same input, same bytes (and so the same image ID).
	var again bytes.Buffer
	if err := imagetar.Write(&again, "example.org:5000/team/demo:v1", files, []string{"/demo"}, []string{"A=1"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("Write is not deterministic")
	}
}

func TestWriteDefaultsAndErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := imagetar.Write(&buf, "demo", nil, nil, []string{"PATH=/bin"}); err != nil {
		t.Fatal(err)
	}
	_, outer := readTar(t, buf.Bytes())
	var manifest []struct{ RepoTags []string }
	if err := json.Unmarshal(outer["manifest.json"], &manifest); err != nil || manifest[0].RepoTags[0] != "demo:latest" {
		t.Errorf("untagged reference: manifest %+v, %v; want demo:latest", manifest, err)
	}

	for name, tc := range map[string]struct {
		ref   string
		files []imagetar.File
	}{
		"bad reference":    {ref: "Demo:1"},
		"digest reference": {ref: "demo@sha256:" + strings.Repeat("a", 64)},
		"relative path":    {ref: "demo", files: []imagetar.File{{Path: "demo"}}},
		"root":             {ref: "demo", files: []imagetar.File{{Path: "/"}}},
		"duplicate":        {ref: "demo", files: []imagetar.File{{Path: "/a"}, {Path: "/./a"}}},
		"file over dir":    {ref: "demo", files: []imagetar.File{{Path: "/tmp"}}},
	} {
		if err := imagetar.Write(io.Discard, tc.ref, tc.files, nil, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestWriteFromDisk: a file streamed from disk gives the same archive,
// byte for byte, as the same content given as Data.
func TestWriteFromDisk(t *testing.T) {
	content := bytes.Repeat([]byte("hostlet "), 100_000) // 800 kB
	disk := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(disk, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := imagetar.FromDisk(disk, "/bin/tool", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	var streamed, inMemory bytes.Buffer
	if err := imagetar.Write(&streamed, "demo:v1", []imagetar.File{f}, []string{"/bin/tool"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := imagetar.Write(&inMemory, "demo:v1", []imagetar.File{{Path: "/bin/tool", Mode: 0o755, Data: content}}, []string{"/bin/tool"}, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(streamed.Bytes(), inMemory.Bytes()) {
		t.Fatalf("streamed archive (%d bytes) differs from the in-memory one (%d bytes)", streamed.Len(), inMemory.Len())
	}
}

func TestWriteStreamErrors(t *testing.T) {
	open := func(data string) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(data)), nil }
	}
	// changing returns other content of the same size on its second
	// opening.
	calls := 0
	changing := func() (io.ReadCloser, error) {
		calls++
		return io.NopCloser(strings.NewReader(string(rune('a' + calls)))), nil
	}
	for _, tc := range []struct {
		name string
		file imagetar.File
		want string
	}{
		{"open fails", imagetar.File{Path: "/a", Size: 1, Open: func() (io.ReadCloser, error) { return nil, errors.New("boom") }}, "boom"},
		{"short", imagetar.File{Path: "/a", Size: 10, Open: open("abc")}, "read 3 bytes, want 10"},
		{"data and open", imagetar.File{Path: "/a", Data: []byte("a"), Size: 1, Open: open("a")}, "both Data and Open"},
		{"changed between passes", imagetar.File{Path: "/a", Size: 1, Open: changing}, "changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := imagetar.Write(io.Discard, "demo:v1", []imagetar.File{tc.file}, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := imagetar.FromDisk(t.TempDir(), "/a", 0o644); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FromDisk of a directory: %v", err)
	}
}

// configOf is the image config of a one-image archive.
func configOf(t *testing.T, archive []byte) map[string]json.RawMessage {
	t.Helper()
	_, outer := readTar(t, archive)
	var manifest []struct{ Config string }
	if err := json.Unmarshal(outer["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v %+v", err, manifest)
	}
	var cfg struct{ Config map[string]json.RawMessage }
	if err := json.Unmarshal(outer[manifest[0].Config], &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg.Config
}

// TestWriteGivesNoLabels: the images Write makes (hostlet's pause image
// among them) carry no labels and no ONBUILD triggers, so no container
// made from them inherits hostlet's labels (issue 30, finding 3: a built
// image did); WriteConfig gives the ones asked for.
func TestWriteGivesNoLabels(t *testing.T) {
	files := []imagetar.File{{Path: "/hostlet", Mode: 0o755, Data: []byte("binary")}}
	var plain bytes.Buffer
	if err := imagetar.Write(&plain, "hostlet-pause:0123456789ab-01234567", files, []string{"/hostlet", "pause"}, nil); err != nil {
		t.Fatal(err)
	}
	cfg := configOf(t, plain.Bytes())
	for _, key := range []string{"Labels", "OnBuild"} {
		if v, ok := cfg[key]; ok {
			t.Errorf("the pause image's config has %s %s, want none", key, v)
		}
	}
	var given bytes.Buffer
	err := imagetar.WriteConfig(&given, "example.org/base:1", files, imagetar.Config{
		Entrypoint: []string{"/hostlet"}, OnBuild: []string{"ENV A=1"}, Labels: map[string]string{"org.example": "x"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg = configOf(t, given.Bytes())
	if string(cfg["OnBuild"]) != `["ENV A=1"]` || string(cfg["Labels"]) != `{"org.example":"x"}` {
		t.Errorf("config OnBuild %s, Labels %s, want those given", cfg["OnBuild"], cfg["Labels"])
	}
}
