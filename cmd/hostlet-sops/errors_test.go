package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestRefusesWhatItCannotTrust: a file for another key, a changed value, a
// changed MAC, a file that is not SOPS and an unknown format each give
// their kind and a message without a value of the file.
func TestRefusesWhatItCannotTrust(t *testing.T) {
	k := newKeys(t)
	const secret = "hunter2-do-not-show"
	enc := encrypt(t, "app.env", []byte("PASSWORD="+secret+"\nUSER=admin\n"), k.ageRecip)
	encYAML := encrypt(t, "v.yaml", []byte("password: "+secret+"\nuser: admin\n"), k.ageRecip)
	value := regexp.MustCompile(`data:([A-Za-z0-9+/=]+)`)
	flip := func(b []byte, re *regexp.Regexp) []byte {
		out := bytes.Clone(b)
		loc := re.FindSubmatchIndex(out)
		i := loc[2] + 2
		if out[i] == 'A' {
			out[i] = 'B'
		} else {
			out[i] = 'A'
		}
		return out
	}
	macLine := regexp.MustCompile(`sops_mac=ENC\[AES256_GCM,data:([A-Za-z0-9+/=]+)`)
	tests := []struct {
		name   string
		req    Request
		kind   string
		substr string
	}{
		{name: "another host's file", req: Request{Identities: []string{k.wrongID}, Files: []File{{Format: "dotenv", Data: enc}}},
			kind: KindNoKey, substr: "no matching age identity (the file is encrypted for " + k.ageRecip + ")"},
		{name: "a changed value", req: Request{Identities: []string{k.ageID}, Files: []File{{Format: "dotenv", Data: flip(enc, value)}}},
			kind: KindIntegrity, substr: "the file was changed after it was encrypted"},
		{name: "a changed MAC", req: Request{Identities: []string{k.ageID}, Files: []File{{Format: "dotenv", Data: flip(enc, macLine)}}},
			kind: KindIntegrity, substr: "MAC mismatch"},
		{name: "a value removed", req: Request{Identities: []string{k.ageID}, Files: []File{{Format: "yaml", Data: regexp.MustCompile(`(?m)^user: .*\n`).ReplaceAll(encYAML, nil)}}},
			kind: KindIntegrity, substr: "MAC mismatch"},
		{name: "not a SOPS file", req: Request{Identities: []string{k.ageID}, Files: []File{{Format: "dotenv", Data: []byte("PASSWORD=" + secret + "\n")}}},
			kind: KindFormat, substr: "not a SOPS dotenv file"},
		{name: "an unknown format", req: Request{Identities: []string{k.ageID}, Files: []File{{Format: "toml", Data: enc}}},
			kind: KindFormat, substr: `unknown format "toml"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ask(t, tc.req).Files[0]
			if got.Kind != tc.kind || !strings.Contains(got.Error, tc.substr) || got.Plaintext != nil {
				t.Errorf("result %s %q (%d bytes of plaintext), want %s containing %q", got.Kind, got.Error, len(got.Plaintext), tc.kind, tc.substr)
			}
			if strings.Contains(got.Error, secret) {
				t.Errorf("the error shows the value: %q", got.Error)
			}
		})
	}
}

// TestRefusesARequestWithoutKeys: sops would look for keys in the
// environment and the home folder; the helper never lets it.
func TestRefusesARequestWithoutKeys(t *testing.T) {
	k := newKeys(t)
	enc := encrypt(t, "app.env", []byte("A=b\n"), k.ageRecip)
	t.Setenv("SOPS_AGE_KEY", k.ageID)
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{name: "no identity", req: Request{Files: []File{{Format: "dotenv", Data: enc}}}, want: "no age identity or SSH key"},
		{name: "a plugin identity", req: Request{Identities: []string{"AGE-PLUGIN-YUBIKEY-1QQQQQQ"}, Files: []File{{Format: "dotenv", Data: enc}}}, want: "age identities 1"},
		{name: "not an SSH key", req: Request{SSHKeys: [][]byte{[]byte("ssh-ed25519 AAAA")}, Files: []File{{Format: "dotenv", Data: enc}}}, want: "SSH key 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(tc.req)
			var out bytes.Buffer
			err := serve(bytes.NewReader(in), &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("answered %q", out.String())
			}
		})
	}
	for _, in := range []string{"", "{", "[]", `{"files":[{"format":"yaml","data":"!"}]}`} {
		if err := serve(strings.NewReader(in), &bytes.Buffer{}); err == nil {
			t.Errorf("request %q: no error", in)
		}
	}
	big := bytes.Repeat([]byte(" "), maxRequest+1)
	if err := serve(bytes.NewReader(big), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "over 96 MiB") {
		t.Errorf("a request over the bound: %v", err)
	}
}
