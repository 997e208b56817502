package sopsfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDetectsSopsFilesByContent: files the sops CLI wrote (testdata, each
// NAME.sops encrypted as NAME) are recognised under their own name and
// under names that say nothing, with the format sops reads them with and
// their recipients; key groups count.
func TestDetectsSopsFilesByContent(t *testing.T) {
	tests := []struct {
		file       string
		as         string
		format     string
		recipients int
	}{
		{file: "app.env.sops", as: "app.env", format: Dotenv, recipients: 1},
		{file: "app.env.sops", as: ".env.production", format: Dotenv, recipients: 1},
		{file: "app.env.sops", as: "secrets", format: Dotenv, recipients: 1},
		{file: "two.env.sops", as: ".env", format: Dotenv, recipients: 2},
		{file: "groups.env.sops", as: "stack.env", format: Dotenv, recipients: 2},
		{file: "v.yaml.sops", as: "v.yaml", format: YAML, recipients: 1},
		{file: "v.yaml.sops", as: "values", format: YAML, recipients: 1},
		{file: "groups.yaml.sops", as: "g.yml", format: YAML, recipients: 2},
		{file: "c.json.sops", as: "c.json", format: JSON, recipients: 1},
		{file: "groups.json.sops", as: "g.json", format: JSON, recipients: 2},
		{file: "c.ini.sops", as: "c.ini", format: INI, recipients: 1},
		{file: "groups.ini.sops", as: "conf", format: INI, recipients: 2},
		{file: "b.bin.sops", as: "b.bin", format: Binary, recipients: 1},
		{file: "b.bin.sops", as: "tls.key", format: Binary, recipients: 1},
		{file: "b.bin.sops", as: "b.json", format: JSON, recipients: 1},
	}
	for _, tc := range tests {
		t.Run(tc.as, func(t *testing.T) {
			info, ok, err := Detect(tc.as, readTestdata(t, tc.file))
			if err != nil || !ok {
				t.Fatalf("Detect: %v %v", ok, err)
			}
			if info.Format != tc.format || !info.MAC || info.Version != "3.13.3" || len(info.AgeRecipients) != tc.recipients || len(info.OtherKeys) != 0 {
				t.Errorf("info %+v, want format %s, a MAC, version 3.13.3, %d age recipients", info, tc.format, tc.recipients)
			}
			for _, r := range info.AgeRecipients {
				if !strings.HasPrefix(r, "age1") {
					t.Errorf("recipient %q", r)
				}
			}
		})
	}
}

// TestPlainFilesAreNotSops: files that mention sops, or hold a part of
// its metadata, are plain files.
func TestPlainFilesAreNotSops(t *testing.T) {
	for name, data := range map[string]string{
		"compose.yaml":  "services:\n  sops:\n    image: getsops/sops\n",
		"a.env":         "SOPS_AGE_KEY_FILE=/keys\nUSE_SOPS=1\n",
		"notes.md":      "we use sops: see docs\n",
		"c.json":        `{"sops_mac": "x", "name": "sops"}`,
		"nested.yaml":   "a:\n  sops:\n    mac: x\n",
		"list.yaml":     "- sops:\n    mac: x\n",
		"broken.json":   `{"sops": `,
		"section.ini":   "[notsops]\nmac = x\n",
		"plain.env":     "A=sops\n",
		"empty.yaml":    "",
		"flow.yaml":     "{a: sops}",
		"comment.yaml":  "# sops:\nb: 1\n",
		"indented.yaml": "  sops:\n    mac: x\n",
	} {
		info, ok, err := Detect(name, []byte(data))
		if ok || err != nil {
			t.Errorf("%s: detected %+v, %v", name, info, err)
		}
	}
}

// TestMetadataWithoutAMacOrAgeKey: a sops file without a MAC is still
// recognised (so it is refused, not used as plain), and keys of other
// kinds are named.
func TestMetadataWithoutAMacOrAgeKey(t *testing.T) {
	tests := []struct {
		name, data string
		want       Info
	}{
		{name: "a.yaml", data: "a: ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\nsops:\n    pgp:\n        - fp: ABC\n    version: 3.7.0\n",
			want: Info{Format: YAML, Version: "3.7.0", OtherKeys: []string{"pgp"}}},
		{name: "a.json", data: `{"a":"x","sops":{"kms":[{"arn":"x"}],"mac":"ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]","key_groups":[{"hc_vault":[{"x":1}],"age":[{"recipient":"` + testRecipient + `"}]}]}}`,
			want: Info{Format: JSON, MAC: true, AgeRecipients: []string{testRecipient}, OtherKeys: []string{"hc_vault", "kms"}}},
		{name: "a.env", data: "A=ENC[x]\nsops_version=3.8.0\nsops_gcp_kms__list_0__map_resource_id=x\nsops_key_groups__list_0__map_azure_kv__list_0__map_name=y\n",
			want: Info{Format: Dotenv, Version: "3.8.0", OtherKeys: []string{"azure_kv", "gcp_kms"}}},
		{name: "a.ini", data: "[x]\na = b\n[sops]\nversion = 3.9.0\nmac = ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\nage__list_0__map_recipient = " + testRecipient + "\n",
			want: Info{Format: INI, MAC: true, Version: "3.9.0", AgeRecipients: []string{testRecipient}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, ok, err := Detect(tc.name, []byte(tc.data))
			if !ok || err != nil {
				t.Fatalf("not detected: %v", err)
			}
			if info.Format != tc.want.Format || info.MAC != tc.want.MAC || info.Version != tc.want.Version ||
				strings.Join(info.AgeRecipients, ",") != strings.Join(tc.want.AgeRecipients, ",") || strings.Join(info.OtherKeys, ",") != strings.Join(tc.want.OtherKeys, ",") {
				t.Errorf("info %+v, want %+v", info, tc.want)
			}
		})
	}
}

// TestUnreadableMetadataIsAnError: a sops block that is not a mapping is
// an error, not a plain file.
func TestUnreadableMetadataIsAnError(t *testing.T) {
	for name, data := range map[string]string{
		"a.yaml": "a: 1\nsops:\n  mac: [\n",
		"a.json": `{"sops": [1, 2]}`,
	} {
		if _, ok, err := Detect(name, []byte(data)); !ok || err == nil {
			t.Errorf("%s: ok %v, error %v", name, ok, err)
		}
	}
}

// testRecipient looks like an age recipient.
const testRecipient = "age1ha402c2gh8xm7utdpmh49rfhmcdztn0s0s57ylqgszkahzxjcexq0jqnp3"

func TestIsEncryptedValue(t *testing.T) {
	for s, want := range map[string]bool{
		"ENC[AES256_GCM,data:Yg==,iv:x,tag:y,type:str]": true,
		"ENC[AES256_GCM,data:":                          false,
		"hunter2":                                       false,
		"":                                              false,
	} {
		if got := IsEncryptedValue(s); got != want {
			t.Errorf("%q: %v", s, got)
		}
	}
}

// TestDetectReadsAsSopsDoes: the content decides as sops's stores read
// it: escaped JSON keys, data after a JSON document, comments before it,
// a quoted YAML key; lines of a YAML file that look like INI or dotenv
// metadata do not make it one; a plain file with a made-up MAC is not a
// MAC; a JSON data object is no binary file; a recipient that is not one
// is left out.
func TestDetectReadsAsSopsDoes(t *testing.T) {
	yamlFile := string(readTestdata(t, "v.yaml.sops"))
	const mac = `"ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]"`
	tests := []struct {
		name, as, data string
		format         string
		mac            bool
		recipients     int
	}{
		{name: "an escaped key", as: "c.json", data: `{"a":"b","\u0073ops":{"mac":` + mac + `}}`, format: JSON, mac: true},
		{name: "data after the document", as: "c.json", data: `{"a":"b","sops":{"mac":` + mac + `}} trailing`, format: JSON, mac: true},
		{name: "comments before JSON", as: "c.yaml", data: "# c\n---\n{\"a\":\"b\",\"sops\":{\"mac\":" + mac + "}}", format: YAML, mac: true},
		{name: "a quoted key", as: "c.yaml", data: "a: b\n\"sops\":\n    mac: " + mac + "\n", format: YAML, mac: true},
		{name: "an INI header in a block scalar", as: "v.yaml", data: "config: |\n    [sops]\n    x = y\n" + yamlFile, format: YAML, mac: true, recipients: 1},
		{name: "dotenv lines in a block scalar", as: "v.yaml", data: "script: |\nsops_version=$(sops --version)\n" + yamlFile, format: YAML, mac: true, recipients: 1},
		{name: "a plain INI file with a [sops] header", as: "c.ini", data: "[server]\npassword = hunter2\n[sops]\n", format: INI},
		{name: "a JSON data object", as: "db-secret", data: `{"data":{"p":"q"},"sops":{"mac":` + mac + `}}`, format: JSON, mac: true},
		{name: "a recipient with a line break", as: "c.json", data: `{"sops":{"mac":` + mac + `,"age":[{"recipient":"age1x\nlevel=INFO msg=fake"}]}}`, format: JSON, mac: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, ok, err := Detect(tc.as, []byte(tc.data))
			if !ok || err != nil {
				t.Fatalf("not detected: %v", err)
			}
			if info.Format != tc.format || info.MAC != tc.mac || len(info.AgeRecipients) != tc.recipients {
				t.Errorf("info %+v, want format %s, MAC %v, %d recipients", info, tc.format, tc.mac, tc.recipients)
			}
		})
	}
}

// TestAMadeUpMACIsNoSopsFile: a plain dotenv file with a sops_mac line
// that is not an encrypted value is a plain file (validate
// --require-encrypted says so).
func TestAMadeUpMACIsNoSopsFile(t *testing.T) {
	if info, ok, err := Detect(".env", []byte("DB_PASSWORD=hunter2\nsops_mac=x\n")); ok || err != nil {
		t.Errorf("detected %+v, %v", info, err)
	}
}

// TestMetadataOfManyKeysIsRefused: a sops block of a hundred thousand keys
// is refused within its node budget, not decoded (the YAML decoder checks
// a mapping's keys for duplicates pairwise).
func TestMetadataOfManyKeysIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("a: b\nsops: {mac: x, version: 3")
	for n := 0; b.Len() < maxMetadata-16; n++ {
		fmt.Fprintf(&b, ",k%d: 1", n)
	}
	b.WriteString("}\n")
	if _, ok, err := Detect("x.yaml", []byte(b.String())); !ok || err == nil || !strings.Contains(err.Error(), "too much structure") {
		t.Errorf("ok %v, error %v", ok, err)
	}
}
