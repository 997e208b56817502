package rollouts

import (
	"fmt"
	"strings"
	"testing"
)

// TestDecodeHolds: a holds file is bounded and cleaned as it is read; an
// entry that is not a pod's is left out, the others kept.
func TestDecodeHolds(t *testing.T) {
	many := strings.Builder{}
	many.WriteString(`{"pods": {`)
	for i := range MaxHolds + 5 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"p%d": {"by": "x"}`, i)
	}
	many.WriteString(`}}`)
	tests := []struct {
		name    string
		in      string
		holds   int
		check   func(t *testing.T, s savedHolds)
		wantErr bool
	}{
		{name: "bad entries left out", in: `{"pods": {"web": {"by": "alice"}, "../x": {"by": "mallory"}, "db": null}, "heldBack": {"api": {"hash": "v1:a"}, "BAD": {"hash": "v1:b"}, "x": {}}}`, holds: 1,
			check: func(t *testing.T, s savedHolds) {
				if len(s.HeldBack) != 1 || s.HeldBack["api"] == nil {
					t.Errorf("held back %+v, want api only", s.HeldBack)
				}
			}},
		{name: "text cleaned", in: "{\"pods\": {\"web\": {\"by\": \"a\\u001b[31m\", \"reason\": \"" + strings.Repeat("r", 5000) + "\"}}}", holds: 1,
			check: func(t *testing.T, s savedHolds) {
				if h := s.Pods["web"]; strings.ContainsRune(h.By, 0x1b) || len(h.Reason) > MaxHoldText {
					t.Errorf("hold %q / %d bytes, want control characters replaced and the reason cut", h.By, len(h.Reason))
				}
			}},
		{name: "at most MaxHolds", in: many.String(), holds: MaxHolds},
		{name: "too big", in: `{"pods": {}, "x": "` + strings.Repeat("x", MaxHoldsFileBytes) + `"}`, wantErr: true},
		{name: "not a holds file", in: `[]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := decodeHolds([]byte(tt.in), nil)
			if (err != nil) != tt.wantErr || len(s.Pods) != tt.holds {
				t.Fatalf("decodeHolds: %d holds, %v; want %d, error %v", len(s.Pods), err, tt.holds, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

// FuzzDecodeHolds: any holds file decodes or fails, within its bounds.
func FuzzDecodeHolds(f *testing.F) {
	f.Add([]byte(`{"pods": {"web": {"by": "alice", "reason": "x", "since": "2026-12-05T14:00:00Z"}}, "heldBack": {"api": {"hash": "v1:ab"}}}`))
	f.Add([]byte(`{"pods": null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeHolds(b, nil)
		if err != nil {
			return
		}
		if len(s.Pods) > MaxHolds {
			t.Fatalf("%d holds", len(s.Pods))
		}
		for id, h := range s.Pods {
			if h == nil || !podIDRE.MatchString(id) || len(h.Reason) > MaxHoldText {
				t.Fatalf("hold %q %+v", id, h)
			}
		}
	})
}
