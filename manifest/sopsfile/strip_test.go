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
