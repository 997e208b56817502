package fleet

import (
	"strings"
	"testing"
)

func TestParseWave(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "selector", in: "canary: role=canary", want: "canary role=canary"},
		{name: "every host", in: "rest:*", want: "rest *"},
		{name: "spaces and pairs", in: " eu :zone=a, role=web ", want: "eu role=web,zone=a"},
		{name: "no colon", in: "canary role=canary", err: "want NAME: SELECTOR"},
		{name: "no name", in: ": *", err: "is not a wave name"},
		{name: "bad selector", in: "a: role", err: "wave a: selector"},
		{name: "empty selector", in: "a:", err: "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ParseWave(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseWave(%q): %v, want an error with %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Name + " " + w.Selector.String(); got != tc.want {
				t.Errorf("ParseWave(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestAssign(t *testing.T) {
	hosts := []Host{
		{Name: "a", Labels: map[string]string{"role": "canary"}},
		{Name: "b", Labels: map[string]string{"role": "web"}},
		{Name: "c", Labels: map[string]string{"role": "canary", "zone": "x"}},
		{Name: "d"},
	}
	wave := func(s string) Wave {
		w, err := ParseWave(s)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	names := func(waves [][]Host) string {
		var parts []string
		for _, w := range waves {
			var ns []string
			for _, h := range w {
				ns = append(ns, h.Name)
			}
			parts = append(parts, strings.Join(ns, ","))
		}
		return strings.Join(parts, " | ")
	}

	got, ws, err := Assign(hosts, nil)
	if err != nil || names(got) != "a,b,c,d" || len(ws) != 1 || ws[0].Name != "all" {
		t.Errorf("no waves: %s %v %v; want one wave all of every host", names(got), ws, err)
	}
	// First match wins; order kept inside a wave; an empty wave stays.
	got, _, err = Assign(hosts, []Wave{wave("canary: role=canary"), wave("x: zone=x"), wave("rest: *")})
	if err != nil || names(got) != "a,c |  | b,d" {
		t.Errorf("waves: %q, %v", names(got), err)
	}
	if _, _, err := Assign(hosts, []Wave{wave("canary: role=canary")}); err == nil || !strings.Contains(err.Error(), "no wave picks host(s) b, d") {
		t.Errorf("hosts left out: %v", err)
	}
	if _, _, err := Assign(hosts, []Wave{wave("a: *"), wave("a: role=web")}); err == nil || !strings.Contains(err.Error(), "wave a given twice") {
		t.Errorf("a wave given twice: %v", err)
	}
}
