package window

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParse parses entries (one a line) in a time zone and reads the
// schedule at a time between 1970 and 2100. Parse must not panic; an
// error must name each bad entry by its key; a schedule that parses must
// answer State in bounded time, agreeing with Open, with the next opening
// at most eight days ahead in UTC (fifteen where clocks change) and a
// window open exactly from then.
func FuzzParse(f *testing.F) {
	seeds := []struct {
		specs, tz string
		at        int64
	}{
		{"Mon-Fri 02:00-04:00\nSat 00:00-06:00", "", 1772417000},
		{"Fri 22:00-02:00", "UTC", 0},
		{"Sun 23:00-01:00\nMon,Wed,Fri-Sat 01:00-01:30", "Europe/Berlin", 1774745000},
		{"* 00:00-24:00", "", 5},
		{"daily 02:30-03:00", "Europe/Berlin", 1774746000},
		{"Monday-friday 23:59-00:01", "America/New_York", 1762063200},
		{"Fri-Mon 00:00-24:00\nTue-Thu 00:00-24:00", "Australia/Lord_Howe", 1},
		{"Sat 25:00-06:00", "Mars/Base", 0},
		{"Mon,,Tue 02:00-04:00\n\n24:00-01:00", "../x", 0},
		{"Fri 02:00-02:00", "Pacific/Apia", 1325239200},
	}
	for _, s := range seeds {
		f.Add(s.specs, s.tz, s.at)
	}
	const from, span = 0, 130 * 365 * 24 * 3600 // 1970 to 2100
	f.Fuzz(func(t *testing.T, specs, tz string, at int64) {
		var list []string
		if specs != "" {
			list = strings.Split(specs, "\n")
		}
		s, err := Parse(list, tz)
		if err != nil {
			var errs ErrorList
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %v (%T) is not an ErrorList", err, err)
			}
			for _, e := range errs {
				if !strings.HasPrefix(e.Field, "sync.windows[") && e.Field != "sync.timezone" {
					t.Fatalf("error %q names no key", e)
				}
			}
			return
		}
		if at < 0 {
			at = -at
		}
		t0 := time.Unix(from+at%span, 0)
		maxNext := 8 * 24 * time.Hour
		if s.loc != time.UTC {
			maxNext = 15 * 24 * time.Hour
		}
		st := s.State(t0)
		if st.Open != s.Open(t0) {
			t.Fatalf("%v at %s: State says open %v, Open the opposite", s, t0, st.Open)
		}
		if s.alwaysOpen() {
			if st != (State{Open: true}) {
				t.Fatalf("%v at %s: always open, but %s", s, t0, show(st))
			}
			return
		}
		after := t0
		if st.Open {
			if !st.Closes.After(t0) || s.Open(st.Closes) {
				t.Fatalf("%v at %s: closes %s", s, t0, show(st))
			}
			after = st.Closes
		}
		if !st.Next.After(after) || st.Next.Sub(after) > maxNext || !s.Open(st.Next) {
			t.Fatalf("%v at %s: next %s not within %s", s, t0, show(st), maxNext)
		}
	})
}
