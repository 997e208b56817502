package config

import (
	"maps"
	"strings"
	"testing"
)

// TestLabels: host labels load with their case, and a bad key or value
// stops hostlet at start naming it.
func TestLabels(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    map[string]string
		wantErr string
	}{
		{name: "none", yaml: "hostname: h\n", want: map[string]string{}},
		{name: "role and zone", yaml: "hostname: h\nlabels: {role: canary, zone: eu-1a, rack: \"7\"}\n", want: map[string]string{"role": "canary", "zone": "eu-1a", "rack": "7"}},
		{name: "value case kept", yaml: "hostname: h\nlabels: {tier: Gold}\n", want: map[string]string{"tier": "Gold"}},
		{name: "key in capitals", yaml: "hostname: h\nlabels: {Role: canary}\n", wantErr: `key "labels": "Role" is not a label key`},
		{name: "bad value", yaml: "hostname: h\nlabels: {role: \"a b\"}\n", wantErr: `key "labels.role": "a b" is not a label value`},
		{name: "value too long", yaml: "hostname: h\nlabels: {role: " + strings.Repeat("a", 64) + "}\n", wantErr: `key "labels.role"`},
		{name: "not a map", yaml: "hostname: h\nlabels: [a]\n", wantErr: "labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load: %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(c.Labels, tt.want) {
				t.Fatalf("labels %v, want %v", c.Labels, tt.want)
			}
		})
	}
}

// TestHostnameAndPrefix: a hostname is one path element of the host's
// etcd keys; the prefix is spelled one way.
func TestHostnameAndPrefix(t *testing.T) {
	for _, tt := range []struct {
		yaml, wantErr, prefix string
	}{
		{yaml: "hostname: web-1\n", prefix: "/hostlet"},
		{yaml: "hostname: Web_1.example\n", prefix: "/hostlet"},
		{yaml: "hostname: web-1\netcd: {prefix: \"hostlet/\"}\n", prefix: "/hostlet"},
		{yaml: "hostname: web-1\netcd: {prefix: \"/a/b//\"}\n", prefix: "/a/b"},
		{yaml: "hostname: \"x/../web-2\"\n", wantErr: `key "hostname": "x/../web-2" is not a host name`},
		{yaml: "hostname: \"..\"\n", wantErr: `key "hostname"`},
		{yaml: "hostname: \"a b\"\n", wantErr: `key "hostname"`},
	} {
		c, err := Load(writeConfig(t, tt.yaml))
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%q: %v, want an error containing %q", tt.yaml, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || c.Etcd.Prefix != tt.prefix):
			t.Errorf("%q: %v, prefix %q; want %q", tt.yaml, err, c.Etcd.Prefix, tt.prefix)
		}
	}
}
