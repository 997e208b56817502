package fleet

import (
	"strings"
	"testing"
)

func TestSelector(t *testing.T) {
	canary := map[string]string{"role": "canary", "zone": "a"}
	rest := map[string]string{"role": "web", "zone": "a"}
	none := map[string]string{}
	tests := []struct {
		in      string
		wantErr string
		str     string
		matches []bool // canary, rest, none
	}{
		{in: "*", str: "*", matches: []bool{true, true, true}},
		{in: " * ", str: "*", matches: []bool{true, true, true}},
		{in: "role=canary", str: "role=canary", matches: []bool{true, false, false}},
		{in: "zone=a, role=canary", str: "role=canary,zone=a", matches: []bool{true, false, false}},
		{in: "zone=a", str: "zone=a", matches: []bool{true, true, false}},
		{in: "role=", str: "role=", matches: []bool{false, false, false}},
		{in: "", wantErr: "empty (use * for every host)"},
		{in: "role", wantErr: `"role" is not key=value`},
		{in: "Role=canary", wantErr: `"Role" is not a label key`},
		{in: "role=a b", wantErr: `"a b" is not a label value`},
		{in: "role=a,role=b", wantErr: `key "role" given twice`},
		{in: "role=a,", wantErr: `"" is not key=value`},
		{in: strings.Repeat("a", 2000), wantErr: "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := ParseSelector(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSelector: %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || s.String() != tt.str {
				t.Fatalf("ParseSelector: %q, %v; want %q", s, err, tt.str)
			}
			for i, labels := range []map[string]string{canary, rest, none} {
				if got := s.Matches(labels); got != tt.matches[i] {
					t.Errorf("Matches(%v) = %v, want %v", labels, got, tt.matches[i])
				}
			}
		})
	}
}

// FuzzParseSelector: any text parses or fails; a parsed selector prints
// as text that parses to the same selector.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"*", "role=canary,zone=a", "a=", "=", ",", "role=a,role=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSelector(in)
		if err != nil {
			return
		}
		again, err := ParseSelector(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("%q printed as %q, which parses to %q, %v", in, s.String(), again.String(), err)
		}
	})
}
