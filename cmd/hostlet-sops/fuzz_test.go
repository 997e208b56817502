package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	sopsage "github.com/getsops/sops/v3/age"
)

// fuzzIdentities are the identities of testdata/fuzz-age.key, a key made
// for these seeds and used nowhere else.
func fuzzIdentities(t testing.TB) sopsage.ParsedIdentities {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fuzz-age.key"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := age.ParseIdentities(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// seedFiles are testdata's encrypted files (NAME.sops, encrypted as NAME)
// with their formats.
func seedFiles(t testing.TB) []File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.sops"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no seeds in testdata: %v", err)
	}
	var files []File
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, File{Format: formatOf(strings.TrimSuffix(filepath.Base(p), ".sops")), Data: b})
	}
	return files
}

// FuzzDecrypt: whatever the bytes and the format, the decrypt entry
// returns a plaintext or an error of a kind, never a panic, and an error
// never holds more than its bound.
func FuzzDecrypt(f *testing.F) {
	ids := fuzzIdentities(f)
	for _, s := range seedFiles(f) {
		f.Add(s.Format, s.Data)
	}
	f.Add("yaml", []byte("sops:\n  mac: x\n  age: [{recipient: a, enc: b}]\na: ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\n"))
	f.Add("dotenv", []byte("sops_mac=x\nsops_version=3.13.3\nA=ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\n"))
	f.Fuzz(func(t *testing.T, format string, data []byte) {
		d, err := decryptOne(ids, File{Format: format, Data: data})
		if err == nil {
			if d == nil || d.plain == nil {
				t.Fatal("no error and no plaintext")
			}
			return
		}
		r := result(d, err)
		if r.Kind == "" || len(r.Error) > maxError+len("…") || r.Plaintext != nil {
			t.Fatalf("result %+v", r)
		}
	})
}

// TestBoundedInputs: the inputs at the bounds the issue names (a 10 MiB
// file, a deep YAML, a dotenv of 100,000 lines) end promptly with an
// error, in every format they could be given as (a hang would meet the
// test's timeout).
func TestBoundedInputs(t *testing.T) {
	ids := fuzzIdentities(t)
	var dotenv strings.Builder
	for i := range 100_000 {
		dotenv.WriteString("K")
		dotenv.WriteString(strings.Repeat("x", i%10))
		dotenv.WriteString("=ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\n")
	}
	dotenv.WriteString("sops_mac=x\nsops_version=3.13.3\n")
	inputs := map[string][]byte{
		"10 MiB":               bytes.Repeat([]byte("sops: {mac: x}\n#"), 10<<20/16),
		"deep YAML":            []byte(strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)),
		"deep YAML block":      []byte(strings.Repeat("a:\n ", 50_000) + "b\n"),
		"dotenv of 100k lines": []byte(dotenv.String()),
		"deep JSON":            []byte(strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000)),
		"10 MiB of one value":  []byte("a: " + strings.Repeat("x", 10<<20) + "\nsops:\n  mac: x\n"),
	}
	for name, data := range inputs {
		for _, format := range []string{"yaml", "json", "dotenv", "ini", "binary"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				d, err := decryptOne(ids, File{Format: format, Data: data})
				if err == nil {
					t.Fatalf("decrypted %d bytes", len(d.plain))
				}
			})
		}
	}
}

// TestCraftedStructureIsRefused: files made to take sops's memory or
// time (aliases expanded in a later document, a flattened key of
// millions of parts, nesting thousands deep in front of a genuine file,
// an INI section of a hundred thousand keys) are refused before sops
// reads them, each a format error of its own file.
func TestCraftedStructureIsRefused(t *testing.T) {
	ids := fuzzIdentities(t)
	var alias strings.Builder
	alias.WriteString("sops:\n    mac: x\n    version: 3.13.3\n---\nl0: &l0 [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n")
	for i := 1; i < 8; i++ {
		fmt.Fprintf(&alias, "l%d: &l%d [*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d,*l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	genuine := seedFiles(t)
	var yamlFile []byte
	for _, f := range genuine {
		if f.Format == "yaml" {
			yamlFile = f.Data
		}
	}
	var ini strings.Builder
	ini.WriteString("[sops]\nversion = 3\nmac = x\n[s]\n")
	for i := range 100_000 {
		fmt.Fprintf(&ini, "k%d = b\n", i)
	}
	tests := []struct {
		name, format string
		data         []byte
	}{
		{name: "aliases in a later document", format: "yaml", data: []byte(alias.String())},
		{name: "a key of millions of parts", format: "dotenv", data: []byte("sops_version=3.13.3\nsops_mac=x\nsops_x" + strings.Repeat("__map_", 4_000_000) + "=v\n")},
		{name: "deep nesting before a genuine file", format: "yaml", data: append([]byte(strings.Repeat("{a: ", 9000)+"{}"+strings.Repeat("}", 9000)+"\n"), yamlFile...)},
		{name: "an INI section of many keys", format: "ini", data: []byte(ini.String())},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decryptOne(ids, File{Format: tc.format, Data: tc.data})
			if r := result(nil, err); r.Kind != KindFormat {
				t.Errorf("result %+v, want a format error", r)
			}
		})
	}
}
