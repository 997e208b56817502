package release

import "testing"

func TestPublishParseMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		in          string
		total, want int
		err         bool
	}{
		{in: "", total: 10, want: 0},
		{in: "3", total: 10, want: 3},
		{in: "25%", total: 10, want: 3},
		{in: "1%", total: 10, want: 1},
		{in: "100%", total: 7, want: 7},
		{in: "0", err: true},
		{in: "101%", err: true},
		{in: "x%", err: true},
		{in: "-1", err: true},
	} {
		m, err := ParseMaxUnavailable(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseMaxUnavailable(%q): %v", tc.in, err)
			continue
		}
		if got := m.Of(tc.total); err == nil && got != tc.want {
			t.Errorf("ParseMaxUnavailable(%q).Of(%d) = %d, want %d", tc.in, tc.total, got, tc.want)
		}
	}
}
