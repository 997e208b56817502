package sopsfile

import (
	"strings"
	"testing"
)

// TestStripMetadataLeavesTheValues: without its metadata a file reads as
// its own format, every encrypted value still there and nothing of sops.
func TestStripMetadataLeavesTheValues(t *testing.T) {
	for _, tc := range []struct{ file, as string }{
		{"app.env.sops", Dotenv}, {"two.env.sops", Dotenv}, {"v.yaml.sops", YAML}, {"groups.yaml.sops", YAML},
		{"c.json.sops", JSON}, {"groups.json.sops", JSON}, {"c.ini.sops", INI}, {"groups.ini.sops", INI},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data := readTestdata(t, tc.file)
			out, err := StripMetadata(tc.as, data)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), "sops") || strings.Contains(string(out), "BEGIN AGE") {
				t.Errorf("metadata left:\n%s", out)
			}
			if !strings.Contains(string(out), "ENC[AES256_GCM,data:") {
				t.Errorf("values gone:\n%s", out)
			}
			if _, ok, _ := Detect(tc.file, out); ok {
				t.Errorf("still a SOPS file")
			}
		})
	}
	if _, err := StripMetadata(Binary, readTestdata(t, "b.bin.sops")); err == nil {
		t.Error("a binary file stripped")
	}
}

// TestUnencryptedValuesAreNamed: a dotenv file sops encrypted whole has
// none; one whose values an encrypted_regex left alone names them.
func TestUnencryptedValuesAreNamed(t *testing.T) {
	if got := Unencrypted(Dotenv, readTestdata(t, "app.env.sops")); len(got) != 0 {
		t.Errorf("a whole file: %v", got)
	}
	partial := "A=ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\nPASSWORD=hunter2\nEMPTY=\nsops_mac=ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\n"
	if got := Unencrypted(Dotenv, []byte(partial)); strings.Join(got, ",") != "PASSWORD" {
		t.Errorf("a partial file: %v", got)
	}
}

// TestNoValueEncrypted: a YAML file an encrypted_regex matched nothing of
// holds no encrypted value; one encrypted whole does.
func TestNoValueEncrypted(t *testing.T) {
	if NoValueEncrypted(YAML, readTestdata(t, "v.yaml.sops")) {
		t.Error("an encrypted file")
	}
	plain := "password: hunter2\nsops:\n    mac: ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\n"
	if !NoValueEncrypted(YAML, []byte(plain)) {
		t.Error("a file with no value encrypted")
	}
}
