package config

import (
	"strings"
	"testing"
)

// TestVia: a git source may read through etcd (via: etcd), which needs
// etcd.endpoints; nothing else may say via.
func TestVia(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{name: "git via etcd", yaml: "etcd: {endpoints: [\"http://127.0.0.1:2379\"]}\nsources:\n  - {name: fleet, type: git, url: \"https://git.example.org/f.git\", via: etcd}\n"},
		{name: "no endpoints", yaml: "sources:\n  - {name: fleet, type: git, url: \"https://git.example.org/f.git\", via: etcd}\n", wantErr: `key "etcd.endpoints": required by git source "fleet" (via: etcd)`},
		{name: "not etcd", yaml: "sources:\n  - {name: fleet, type: git, url: \"https://git.example.org/f.git\", via: consul}\n", wantErr: `key "sources[0].via": "consul" is not etcd`},
		{name: "a file source", yaml: "etcd: {endpoints: [\"http://127.0.0.1:2379\"]}\nsources:\n  - {name: local, type: file, path: /x, via: etcd}\n", wantErr: `key "sources[0].via": only a git source`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, "hostname: h\n"+tt.yaml))
			if tt.wantErr == "" {
				if err != nil || c.Sources[0].Via != ViaEtcd {
					t.Fatalf("Load: %v, want the source via etcd", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
