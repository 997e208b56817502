package compose_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/manifest/project"
)

// mounted is one files mount of a pod as a test compares it.
type mounted struct {
	target, source string
	secret         bool
	items          map[string]string // path → data
	modes          map[string]uint32
}

func filesMounts(t *testing.T, m manifest.Manifest) map[string]mounted {
	t.Helper()
	byName := map[string]*manifest.Files{}
	for _, v := range m.Volumes {
		if v.Files != nil {
			byName[v.Name] = v.Files
		}
	}
	out := map[string]mounted{}
	for _, vm := range m.Containers[0].VolumeMounts {
		f := byName[vm.Name]
		if f == nil {
			continue
		}
		if !vm.ReadOnly {
			t.Errorf("files mount %s is not read-only", vm.MountPath)
		}
		mt := mounted{target: vm.MountPath, source: f.Source, secret: f.Secret, items: map[string]string{}, modes: map[string]uint32{}}
		for _, it := range f.Items {
			mt.items[it.Path] = string(it.Data)
			mt.modes[it.Path] = it.ItemMode()
		}
		out[vm.MountPath] = mt
	}
	return out
}

func TestLoadProjectFiles(t *testing.T) {
	files := mapFiles{
		"compose.yaml": `
services:
  web:
    image: busybox
    volumes:
      - ./conf/app.conf:/etc/app.conf
      - ./conf:/etc/conf:rw
      - ./bin/run.sh:/run.sh
    configs:
      - app
      - {source: inline, target: etc/inline.conf, mode: 0440}
    secrets:
      - db_password
      - {source: token, target: api-token}
configs:
  app: {file: ./conf/app.conf}
  inline: {content: "port=${PORT}"}
secrets:
  db_password: {file: secrets/db.txt}
  token: {environment: API_TOKEN}
`,
		".env":            "PORT=8080\nAPI_TOKEN=s3cret\n",
		"conf/app.conf":   "listen 80\n",
		"conf/mime/types": "text/html html\n",
		"bin/run.sh*":     "#!/bin/sh\n",
		"secrets/db.txt":  "hunter2",
	}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	got := filesMounts(t, pods[0].Manifest)
	want := map[string]mounted{
		"/etc/app.conf":            {source: "conf/app.conf", items: map[string]string{"": "listen 80\n"}, modes: map[string]uint32{"": 0o444}},
		"/etc/conf":                {source: "conf", items: map[string]string{"app.conf": "listen 80\n", "mime/types": "text/html html\n"}, modes: map[string]uint32{"app.conf": 0o444, "mime/types": 0o444}},
		"/run.sh":                  {source: "bin/run.sh", items: map[string]string{"": "#!/bin/sh\n"}, modes: map[string]uint32{"": 0o555}},
		"/app":                     {source: "conf/app.conf", items: map[string]string{"": "listen 80\n"}, modes: map[string]uint32{"": 0o444}},
		"/etc/inline.conf":         {source: "config inline", items: map[string]string{"": "port=8080"}, modes: map[string]uint32{"": 0o440}},
		"/run/secrets/db_password": {source: "secrets/db.txt", secret: true, items: map[string]string{"": "hunter2"}, modes: map[string]uint32{"": 0o444}},
		"/run/secrets/api-token":   {source: "secret token", secret: true, items: map[string]string{"": "s3cret"}, modes: map[string]uint32{"": 0o444}},
	}
	for target, w := range want {
		g, ok := got[target]
		if !ok {
			t.Errorf("%s: not mounted (mounts %v)", target, got)
			continue
		}
		w.target = target
		if g.source != w.source || g.secret != w.secret || !equalMaps(g.items, w.items) || !equalMaps(g.modes, w.modes) {
			t.Errorf("%s: got %+v, want %+v", target, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d files mounts, want %d: %v", len(got), len(want), got)
	}
}

func equalMaps[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestRelativeBindsNotInTheProjectAreDataFolders: a relative bind whose
// source the project does not hold (or holds only a placeholder in) is a
// data folder of the project kept on the host, writable unless :ro; one
// that looks like a file is a folder too, with a note; what the project
// holds stays a read-only files mount.
func TestRelativeBindsNotInTheProjectAreDataFolders(t *testing.T) {
	files := mapFiles{
		"compose.yaml": `
services:
  db:
    image: busybox
    volumes:
      - ./data/db:/var/lib/postgresql/data
      - ./keep:/keep
      - ./conf:/etc/conf
      - ./logs/nginx.log:/var/log/nginx.log
      - ./seed:/seed:ro
      - {type: bind, source: ./made, target: /made, bind: {create_host_path: true}}
`,
		"keep/.gitkeep": "",
		"conf/app.conf": "x",
	}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	m := pods[0].Manifest
	want := map[string]struct {
		folder   string
		readOnly bool
	}{
		"/var/lib/postgresql/data": {"shop/data/db", false},
		"/keep":                    {"shop/keep", false},
		"/etc/conf":                {"", true},
		"/var/log/nginx.log":       {"shop/logs/nginx.log", false},
		"/seed":                    {"shop/seed", true},
		"/made":                    {"shop/made", false},
	}
	for _, vm := range m.Containers[0].VolumeMounts {
		v, _ := m.Volume(vm.Name)
		w, ok := want[vm.MountPath]
		if !ok || v.DataFolder != w.folder || vm.ReadOnly != w.readOnly || (w.folder == "") == (v.Files == nil) {
			t.Errorf("%s: data folder %q, read-only %v, files %v; want %+v", vm.MountPath, v.DataFolder, vm.ReadOnly, v.Files != nil, w)
		}
	}
	if len(pods[0].Notes) != 1 || !strings.Contains(pods[0].Notes[0].Error(), "services.db.volumes[3].source: ./logs/nginx.log is not in the project: a folder is made there on the host") {
		t.Errorf("notes %v, want one on the file-looking path", pods[0].Notes)
	}
}

// TestARelativeBindOfAProjectInOneBodyIsAnError: a project delivered as
// one body (an HTTP or etcd source) has no files to tell its config files
// from its data folders: a relative bind stays an error.
func TestARelativeBindOfAProjectInOneBodyIsAnError(t *testing.T) {
	pods, err := compose.LoadBytes(t.Context(), []byte("services:\n  web: {image: busybox, volumes: ['./data:/data']}\n"), compose.Options{Source: "apps", Dir: "shop"})
	errs := errorTexts(t, pods, err)
	want := "services.web.volumes[0].source: ./data: data: a project delivered as one body has no files beside it: file does not exist"
	if len(errs) != 1 || !strings.Contains(errs[0], want) {
		t.Errorf("errors %q, want one with %q", errs, want)
	}
}

// TestLoadProjectFilesHashed: a file's content is in the pod's spec hash,
// and only the pods mounting it see a change.
func TestLoadProjectFilesHashed(t *testing.T) {
	files := mapFiles{
		"compose.yaml": "services:\n  web: {image: busybox, volumes: ['./app.conf:/etc/app.conf']}\n  db: {image: busybox}\n",
		"app.conf":     "one",
	}
	before, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	files["app.conf"] = "two"
	after, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	for i, p := range before {
		changed := manifest.ContainerHash(p.Manifest, 0) != manifest.ContainerHash(after[i].Manifest, 0)
		if want := p.Manifest.ID == "shop-web"; changed != want {
			t.Errorf("%s: hash changed %v, want %v", p.Manifest.ID, changed, want)
		}
	}
}

func TestLoadProjectFilesRefused(t *testing.T) {
	big := strings.Repeat("x", manifest.MaxFileBytes/2+1)
	tests := []struct {
		name    string
		files   mapFiles
		wantErr string
	}{
		{"missing, long syntax without create_host_path", mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    volumes: [{type: bind, source: ./data, target: /data}]\n"},
			`services.web.volumes[0].source: ./data is not a file or folder of the project at this revision, and bind.create_host_path is not set (Compose refuses it too): set it for a data folder kept on the host`},
		{"leaves the project", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, volumes: ['../other/app.conf:/etc/app.conf']}\n"},
			`services.web.volumes[0].source: ../other/app.conf: leaves the project folder`},
		{"unreadable file", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, volumes: ['./conf:/etc/conf']}\n", "conf/a": "x", "conf/broken": "!err"},
			`services.web.volumes[0].source: ./conf: conf/broken: a link`},
		{"config folder", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, configs: [app]}\nconfigs:\n  app: {file: ./conf}\n", "conf/a": "x"},
			`services.web.configs[0].source: config app: ./conf is a folder, not a file`},
		{"external config", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, configs: [app]}\nconfigs:\n  app: {external: true}\n"},
			`services.web.configs[0].source: config app is external (made by a swarm or by hand): hostlet mounts only a file of the project, a content or an environment variable`},
		{"secret variable unset", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, secrets: [tok]}\nsecrets:\n  tok: {environment: TOKEN}\n"},
			`services.web.secrets[0].source: secret tok: variable TOKEN has no value (set it in .env or the host's compose.env)`},
		{"uid", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, secrets: [{source: tok, uid: '1000'}]}\nsecrets:\n  tok: {file: tok.txt}\n", "tok.txt": "x"},
			`services.web.secrets[0]: uid and gid are not supported: hostlet's files are owned by root and readable by every user (mode 0444)`},
		{"write bits", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, configs: [{source: app, mode: 0644}]}\nconfigs:\n  app: {content: x}\n"},
			`services.web.configs[0].mode: 0644 has write bits, and the config is mounted read-only: drop them (0444)`},
		{"mode out of range", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, configs: [{source: app, mode: 01777}]}\nconfigs:\n  app: {content: x}\n"},
			`services.web.configs[0].mode: 01777 is not a file mode (0 to 0777)`},
		{"config driver", mapFiles{"compose.yaml": "services:\n  web: {image: busybox}\nconfigs:\n  app: {content: x, template_driver: golang}\n"},
			`configs.app.template_driver: not supported by hostlet yet`},
		{"project over its bytes", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, scale: 9, volumes: ['./a:/a', './b:/b']}\n", "a": big, "b": big},
			`services.web.volumes[0].source: ./a: the project's pods would mount more than 41943040 bytes or 20000 files (replicas counted)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := load(t, tt.files, compose.Options{})
			found := false
			for _, e := range errs {
				found = found || strings.Contains(e, tt.wantErr)
			}
			if !found {
				t.Errorf("errors %q, want one with %q", errs, tt.wantErr)
			}
		})
	}
}

// TestLoadSecretsNeverInErrors: a secret's value is never part of an
// error, whatever is wrong around it.
func TestLoadSecretsNeverInErrors(t *testing.T) {
	files := mapFiles{
		"compose.yaml": "services:\n  web: {image: busybox, secrets: [{source: tok, mode: 0666}, {source: tok, uid: '0'}]}\nsecrets:\n  tok: {environment: TOKEN}\n",
		".env":         "TOKEN=hunter2-value\n",
	}
	_, errs := load(t, files, compose.Options{})
	if len(errs) == 0 {
		t.Fatal("no errors")
	}
	for _, e := range errs {
		if strings.Contains(e, "hunter2") {
			t.Errorf("error shows the secret: %s", e)
		}
	}
}

// TestBundleExecutable: the bundle's executable files keep their x bit
// through compose.Load.
func TestBundleExecutable(t *testing.T) {
	var b project.Bundle
	for name, data := range map[string]string{"compose.yaml": "services:\n  web: {image: busybox, volumes: ['./run.sh:/run.sh']}\n", "run.sh": "#!/bin/sh\n"} {
		if err := b.Add(name, []byte(data), nil); err != nil {
			t.Fatal(err)
		}
	}
	b.SetExecutable("run.sh")
	b.Options = compose.Options{Source: "apps", Dir: "shop"}
	pods, err := compose.Load(context.Background(), &b, b.Options)
	errs := errorTexts(t, pods, err)
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	if got := filesMounts(t, pods[0].Manifest)["/run.sh"].modes[""]; got != manifest.FileModeExe {
		t.Errorf("mode %#o, want %#o", got, manifest.FileModeExe)
	}
}

// TestLoadPartsOfValuesNeverInErrors: compose-go splits an interpolated
// value (a volume's "source:target:mode") and quotes a part of it, unquoted,
// in its own error: a part four bytes or longer is hidden there too, and a
// service's name that merely equals a short part stays shown.
func TestLoadPartsOfValuesNeverInErrors(t *testing.T) {
	files := mapFiles{
		"compose.yaml": "services:\n  web: {image: busybox, volumes: ['${V}']}\n",
		".env":         "V=Hunter2Secret:/x:zz\n",
	}
	_, errs := load(t, files, compose.Options{})
	if len(errs) == 0 {
		t.Fatal("no errors")
	}
	for _, e := range errs {
		if strings.Contains(strings.ToLower(e), "hunter2") {
			t.Errorf("error shows a part of the value: %s", e)
		}
		if !strings.Contains(e, `"web"`) {
			t.Errorf("error hides the service's name: %s", e)
		}
	}
}

// TestAnOptionalDependencyOnAServiceNotStartedIsLeftOut: depends_on a
// service of an inactive profile with required: false is left out with a
// note, as Compose starts the service without it; required, it is
// Compose's own error.
func TestAnOptionalDependencyOnAServiceNotStartedIsLeftOut(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    depends_on:
      setup: {condition: service_completed_successfully, required: false}
  setup:
    image: busybox
    profiles: [once]
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 || len(pods) != 1 {
		t.Fatalf("pods %d, errors %q", len(pods), errs)
	}
	if deps := pods[0].Manifest.DependsOn; len(deps) != 0 {
		t.Errorf("dependencies %+v, want none", deps)
	}
	if len(pods[0].Notes) != 1 || !strings.Contains(pods[0].Notes[0].Error(), "services.web.depends_on.setup: service setup is not in the project or not in an active profile, and the dependency is optional") {
		t.Errorf("notes %v", pods[0].Notes)
	}
	files["compose.yaml"] = strings.Replace(files["compose.yaml"], ", required: false", "", 1)
	if _, errs := load(t, files, compose.Options{}); len(errs) != 1 || !strings.Contains(errs[0], `service "web" depends on undefined service "setup"`) {
		t.Errorf("required: errors %q", errs)
	}
}
