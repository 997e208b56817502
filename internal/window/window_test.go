package window

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// layout is how the tests write wall-clock times.
const layout = "Mon 2006-01-02 15:04"

// wall reads a wall-clock time ("Mon 2026-03-02 03:00") in loc, and checks
// the weekday written matches the date.
func wall(t *testing.T, loc *time.Location, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation(layout, s, loc)
	if err != nil {
		t.Fatalf("bad test time %q: %v", s, err)
	}
	if v.Format(layout) != s {
		t.Fatalf("test time %q is %s", s, v.Format(layout))
	}
	return v
}

func mustParse(t *testing.T, specs []string, tz string) *Schedule {
	t.Helper()
	s, err := Parse(specs, tz)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", specs, tz, err)
	}
	return s
}

// berlin loads Europe/Berlin; a system without the zoneinfo fails the
// test saying what to install (the package reads the system's,
// time/tzdata is not embedded; make test installs tzdata as root).
func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatalf("no zoneinfo for Europe/Berlin on this system (apt-get install -y tzdata, or set $ZONEINFO): %v", err)
	}
	return loc
}

// days renders a day set as "MTWTFSS", "-" for the days not in it.
func days(s *Schedule, sp span) string {
	var b strings.Builder
	for i, c := range "MTWTFSS" {
		d := time.Weekday((i + 1) % 7)
		on := false
		for _, x := range s.days[d] {
			on = on || x == sp
		}
		if on {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		wantDays string
		want     span
	}{
		{name: "one day", spec: "Mon 02:00-04:00", wantDays: "M------", want: span{120, 240}},
		{name: "range", spec: "Mon-Fri 02:00-04:00", wantDays: "MTWTF--", want: span{120, 240}},
		{name: "wrapping range", spec: "Fri-Mon 10:00-11:00", wantDays: "M---FSS", want: span{600, 660}},
		{name: "sat to sun wraps nowhere", spec: "Sat-Sun 10:00-11:00", wantDays: "-----SS", want: span{600, 660}},
		{name: "range of one day", spec: "Wed-Wed 10:00-11:00", wantDays: "--W----", want: span{600, 660}},
		{name: "list", spec: "Mon,Wed,Fri-Sat 02:00-04:00", wantDays: "M-W-FS-", want: span{120, 240}},
		{name: "star", spec: "* 03:00-04:00", wantDays: "MTWTFSS", want: span{180, 240}},
		{name: "daily", spec: "daily 03:00-04:00", wantDays: "MTWTFSS", want: span{180, 240}},
		{name: "DAILY", spec: "DAILY 03:00-04:00", wantDays: "MTWTFSS", want: span{180, 240}},
		{name: "case", spec: "mON-fri 02:00-04:00", wantDays: "MTWTF--", want: span{120, 240}},
		{name: "full names", spec: "Monday-Wednesday,sunday 02:00-04:00", wantDays: "MTW---S", want: span{120, 240}},
		{name: "past midnight", spec: "Fri 22:00-02:00", wantDays: "----F--", want: span{1320, 1560}},
		{name: "until midnight", spec: "Fri 22:00-00:00", wantDays: "----F--", want: span{1320, 1440}},
		{name: "24:00", spec: "Fri 22:00-24:00", wantDays: "----F--", want: span{1320, 1440}},
		{name: "whole day", spec: "Sun 00:00-24:00", wantDays: "------S", want: span{0, 1440}},
		{name: "one-digit hour", spec: "Sun 2:00-4:30", wantDays: "------S", want: span{120, 270}},
		{name: "spaces around", spec: "  Sun   02:00-04:00 ", wantDays: "------S", want: span{120, 240}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, []string{tt.spec}, "")
			if got := days(s, tt.want); got != tt.wantDays {
				t.Errorf("days with %v = %s, want %s (all: %v)", tt.want, got, tt.wantDays, s.days)
			}
			n := 0
			for _, d := range s.days {
				n += len(d)
			}
			if want := strings.Count(tt.wantDays, "") - 1 - strings.Count(tt.wantDays, "-"); n != want {
				t.Errorf("%d day windows, want %d: %v", n, want, s.days)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		specs []string
		tz    string
		want  []string // every error, in order
	}{
		{name: "hour out of range", specs: []string{"Mon-Fri 02:00-04:00", "Sat 25:00-06:00"},
			want: []string{`sync.windows[1] "Sat 25:00-06:00": start "25:00" is not a time of day (HH:MM)`}},
		{name: "bad end", specs: []string{"Sat 01:00-06:61"},
			want: []string{`sync.windows[0] "Sat 01:00-06:61": end "06:61" is not a time of day (HH:MM, or 24:00)`}},
		{name: "24:00 as start", specs: []string{"Sat 24:00-06:00"},
			want: []string{`sync.windows[0] "Sat 24:00-06:00": start "24:00" is not a time of day (HH:MM); 24:00 is only an end, use 00:00`}},
		{name: "empty window", specs: []string{"Sat 02:00-02:00"},
			want: []string{`sync.windows[0] "Sat 02:00-02:00": empty window; use 00:00-24:00 for a whole day`}},
		{name: "midnight to midnight", specs: []string{"Sat 00:00-00:00"},
			want: []string{`sync.windows[0] "Sat 00:00-00:00": empty window; use 00:00-24:00 for a whole day`}},
		{name: "unknown day", specs: []string{"Mo 02:00-04:00"},
			want: []string{`sync.windows[0] "Mo 02:00-04:00": unknown day "Mo" (Mon to Sun, Monday to Sunday, * or daily)`}},
		{name: "unknown day in range", specs: []string{"Mon-Fry 02:00-04:00"},
			want: []string{`sync.windows[0] "Mon-Fry 02:00-04:00": unknown day "Fry"`}},
		{name: "open range", specs: []string{"Mon- 02:00-04:00"},
			want: []string{`sync.windows[0] "Mon- 02:00-04:00": day range "Mon-" needs a day on each side`}},
		{name: "empty list item", specs: []string{"Mon,,Tue 02:00-04:00"},
			want: []string{`sync.windows[0] "Mon,,Tue 02:00-04:00": empty day in "Mon,,Tue"`}},
		{name: "space in days", specs: []string{"Mon, Tue 02:00-04:00"},
			want: []string{`sync.windows[0] "Mon, Tue 02:00-04:00": want DAYS HH:MM-HH:MM`}},
		{name: "no days", specs: []string{"02:00-04:00"},
			want: []string{`sync.windows[0] "02:00-04:00": want DAYS HH:MM-HH:MM`}},
		{name: "empty entry", specs: []string{""},
			want: []string{`sync.windows[0] "": want DAYS HH:MM-HH:MM`}},
		{name: "no end", specs: []string{"Mon 02:00"},
			want: []string{`sync.windows[0] "Mon 02:00": time range "02:00": want HH:MM-HH:MM`}},
		{name: "seconds", specs: []string{"Mon 02:00:00-04:00"},
			want: []string{`sync.windows[0] "Mon 02:00:00-04:00": start "02:00:00" is not a time of day (HH:MM)`}},
		{name: "am/pm", specs: []string{"Mon 2am-4am"},
			want: []string{`sync.windows[0] "Mon 2am-4am": start "2am" is not a time of day (HH:MM)`}},
		{name: "unknown zone", specs: []string{"Mon 02:00-04:00"}, tz: "Mars/Base",
			want: []string{`sync.timezone "Mars/Base": unknown time zone`}},
		{name: "invalid zone name", tz: "../../etc/passwd",
			want: []string{`sync.timezone "../../etc/passwd": unknown time zone`}},
		{name: "every error at once", specs: []string{"Mon 02:00-04:00", "Xyz 02:00-04:00", "Sat 25:00-06:00"}, tz: "Mars/Base",
			want: []string{
				`sync.windows[1] "Xyz 02:00-04:00": unknown day "Xyz"`,
				`sync.windows[2] "Sat 25:00-06:00": start "25:00"`,
				`sync.timezone "Mars/Base": unknown time zone`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.specs, tt.tz)
			if err == nil {
				t.Fatalf("Parse succeeded: %v", s)
			}
			if s != nil {
				t.Errorf("Parse returned a schedule with its error")
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error %T is not an ErrorList", err)
			}
			if len(list) != len(tt.want) {
				t.Fatalf("%d errors, want %d: %v", len(list), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(list[i].Error(), w) {
					t.Errorf("error %d = %q, want it to start with %q", i, list[i], w)
				}
			}
			if want := strings.Join(func() []string {
				var s []string
				for _, e := range list {
					s = append(s, e.Error())
				}
				return s
			}(), "; "); err.Error() != want {
				t.Errorf("error %q, want the entries joined with '; '", err)
			}
		})
	}
}

// TestAlwaysOpen: no windows (nil or empty list, or a nil *Schedule)
// means no restriction, and so do windows that cover the whole week.
func TestAlwaysOpen(t *testing.T) {
	var nilSchedule *Schedule
	cases := map[string]*Schedule{
		"nil schedule":     nilSchedule,
		"nil list":         mustParse(t, nil, ""),
		"empty list":       mustParse(t, []string{}, "UTC"),
		"star whole day":   mustParse(t, []string{"* 00:00-24:00"}, ""),
		"two halves":       mustParse(t, []string{"Fri-Mon 00:00-24:00", "Tue-Thu 00:00-24:00"}, ""),
		"past midnight":    mustParse(t, []string{"daily 12:00-12:01", "daily 12:01-12:00"}, ""),
		"overlapping days": mustParse(t, []string{"Mon,Wed,Fri,Sun 00:00-07:00", "Mon,Wed,Fri,Sun 06:30-01:00", "Tue,Thu,Sat 00:30-24:00"}, ""),
	}
	start := wall(t, time.UTC, "Mon 2026-03-02 00:00")
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			for m := 0; m < 8*minutesPerDay; m += 7 {
				at := start.Add(time.Duration(m) * time.Minute)
				if !s.Open(at) {
					t.Fatalf("closed at %s", at.Format(layout))
				}
				if st := s.State(at); st != (State{Open: true}) {
					t.Fatalf("State(%s) = %+v, want open with no times", at.Format(layout), st)
				}
			}
		})
	}
	if got := nilSchedule.String(); got != "always open (no maintenance windows)" {
		t.Errorf("nil String() = %q", got)
	}
	// One minute short of the week is not always open.
	s := mustParse(t, []string{"* 00:00-23:59"}, "")
	if s.Open(wall(t, time.UTC, "Tue 2026-03-03 23:59")) {
		t.Error(`"* 00:00-23:59" is open at 23:59`)
	}
}

func TestState(t *testing.T) {
	type check struct {
		at     string // wall-clock, in the schedule's zone
		open   bool
		next   string
		closes string
	}
	tests := []struct {
		name   string
		specs  []string
		checks []check
	}{
		{name: "weekdays and saturday", specs: []string{"Mon-Fri 02:00-04:00", "Sat 00:00-06:00"}, checks: []check{
			{at: "Mon 2026-03-02 01:59", next: "Mon 2026-03-02 02:00"},
			{at: "Mon 2026-03-02 02:00", open: true, closes: "Mon 2026-03-02 04:00", next: "Tue 2026-03-03 02:00"},
			{at: "Mon 2026-03-02 03:59", open: true, closes: "Mon 2026-03-02 04:00", next: "Tue 2026-03-03 02:00"},
			{at: "Mon 2026-03-02 04:00", next: "Tue 2026-03-03 02:00"},
			{at: "Fri 2026-03-06 04:00", next: "Sat 2026-03-07 00:00"},
			{at: "Sat 2026-03-07 05:00", open: true, closes: "Sat 2026-03-07 06:00", next: "Mon 2026-03-09 02:00"},
			// Across the week's end.
			{at: "Sat 2026-03-07 06:00", next: "Mon 2026-03-09 02:00"},
			{at: "Sun 2026-03-08 23:59", next: "Mon 2026-03-09 02:00"},
		}},
		{name: "past midnight", specs: []string{"Fri 22:00-02:00"}, checks: []check{
			{at: "Fri 2026-03-06 21:59", next: "Fri 2026-03-06 22:00"},
			{at: "Fri 2026-03-06 23:00", open: true, closes: "Sat 2026-03-07 02:00", next: "Fri 2026-03-13 22:00"},
			{at: "Sat 2026-03-07 01:59", open: true, closes: "Sat 2026-03-07 02:00", next: "Fri 2026-03-13 22:00"},
			{at: "Sat 2026-03-07 02:00", next: "Fri 2026-03-13 22:00"},
			// Friday's own small hours are not in Friday's window.
			{at: "Fri 2026-03-06 01:00", next: "Fri 2026-03-06 22:00"},
		}},
		{name: "sunday into monday, the week and the year", specs: []string{"Sun 23:00-01:00"}, checks: []check{
			{at: "Sun 2028-12-31 22:59", next: "Sun 2028-12-31 23:00"},
			{at: "Sun 2028-12-31 23:00", open: true, closes: "Mon 2029-01-01 01:00", next: "Sun 2029-01-07 23:00"},
			{at: "Mon 2029-01-01 00:30", open: true, closes: "Mon 2029-01-01 01:00", next: "Sun 2029-01-07 23:00"},
			{at: "Mon 2029-01-01 01:00", next: "Sun 2029-01-07 23:00"},
			// Monday's own late evening is not open: the window is Sunday's.
			{at: "Mon 2029-01-01 23:30", next: "Sun 2029-01-07 23:00"},
		}},
		{name: "adjacent windows merge", specs: []string{"Mon 04:00-06:00", "Mon 02:00-04:00"}, checks: []check{
			{at: "Mon 2026-03-02 03:00", open: true, closes: "Mon 2026-03-02 06:00", next: "Mon 2026-03-09 02:00"},
			{at: "Mon 2026-03-02 04:00", open: true, closes: "Mon 2026-03-02 06:00", next: "Mon 2026-03-09 02:00"},
		}},
		{name: "24:00 meets the next day's 00:00", specs: []string{"Fri 22:00-24:00", "Sat 00:00-02:00"}, checks: []check{
			{at: "Fri 2026-03-06 23:59", open: true, closes: "Sat 2026-03-07 02:00", next: "Fri 2026-03-13 22:00"},
			{at: "Sat 2026-03-07 00:00", open: true, closes: "Sat 2026-03-07 02:00", next: "Fri 2026-03-13 22:00"},
		}},
		{name: "overlapping windows merge", specs: []string{"Mon-Fri 22:00-02:00", "Sat 00:00-06:00", "Sat 05:00-05:30"}, checks: []check{
			{at: "Fri 2026-03-06 23:00", open: true, closes: "Sat 2026-03-07 06:00", next: "Mon 2026-03-09 22:00"},
			{at: "Sat 2026-03-07 05:10", open: true, closes: "Sat 2026-03-07 06:00", next: "Mon 2026-03-09 22:00"},
			{at: "Tue 2026-03-03 01:00", open: true, closes: "Tue 2026-03-03 02:00", next: "Tue 2026-03-03 22:00"},
		}},
		{name: "windows merge over days", specs: []string{"Fri-Mon 00:00-24:00"}, checks: []check{
			{at: "Thu 2026-03-05 12:00", next: "Fri 2026-03-06 00:00"},
			{at: "Fri 2026-03-06 12:00", open: true, closes: "Tue 2026-03-10 00:00", next: "Fri 2026-03-13 00:00"},
			{at: "Mon 2026-03-09 23:59", open: true, closes: "Tue 2026-03-10 00:00", next: "Fri 2026-03-13 00:00"},
		}},
		{name: "star", specs: []string{"* 03:00-04:00"}, checks: []check{
			{at: "Sun 2026-03-08 03:30", open: true, closes: "Sun 2026-03-08 04:00", next: "Mon 2026-03-09 03:00"},
			{at: "Sun 2026-03-08 04:30", next: "Mon 2026-03-09 03:00"},
		}},
		{name: "wrapping day range", specs: []string{"Fri-Mon 10:00-11:00"}, checks: []check{
			{at: "Mon 2026-03-09 10:30", open: true, closes: "Mon 2026-03-09 11:00", next: "Fri 2026-03-13 10:00"},
			{at: "Tue 2026-03-10 10:30", next: "Fri 2026-03-13 10:00"},
			{at: "Sun 2026-03-08 11:00", next: "Mon 2026-03-09 10:00"},
		}},
		{name: "whole week but a minute", specs: []string{"* 00:01-24:00"}, checks: []check{
			{at: "Mon 2026-03-02 12:00", open: true, closes: "Tue 2026-03-03 00:00", next: "Tue 2026-03-03 00:01"},
			{at: "Tue 2026-03-03 00:00", next: "Tue 2026-03-03 00:01"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.specs, "")
			for _, c := range tt.checks {
				at := wall(t, time.UTC, c.at)
				want := State{Open: c.open}
				if c.next != "" {
					want.Next = wall(t, time.UTC, c.next)
				}
				if c.closes != "" {
					want.Closes = wall(t, time.UTC, c.closes)
				}
				got := s.State(at.Add(30 * time.Second))
				if !got.Next.Equal(want.Next) || !got.Closes.Equal(want.Closes) || got.Open != want.Open {
					t.Errorf("State(%s) = %s, want %s", c.at, show(got), show(want))
				}
				if s.Open(at) != c.open {
					t.Errorf("Open(%s) = %v, want %v", c.at, !c.open, c.open)
				}
			}
		})
	}
}

func show(s State) string {
	f := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format(layout + " MST")
	}
	return "{open " + map[bool]string{true: "yes", false: "no"}[s.Open] + ", next " + f(s.Next) + ", closes " + f(s.Closes) + "}"
}

// TestDaylightSaving: windows are wall-clock times; on the days clocks
// change they are what time.Date makes of them. In Europe/Berlin clocks
// go from 02:00 CET to 03:00 CEST on 2026-03-29 and from 03:00 CEST back
// to 02:00 CET on 2026-10-25, both Sundays.
func TestDaylightSaving(t *testing.T) {
	loc := berlin(t)
	utc := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name  string
		specs []string
		at    time.Time // an instant, given in UTC
		want  State     // instants, given in UTC
	}{
		// Spring: 02:00 does not exist; the window opens at 03:00 CEST
		// and is an hour long.
		{name: "spring, before", specs: []string{"Sun 02:00-04:00"}, at: utc("2026-03-28 12:00"),
			want: State{Next: utc("2026-03-29 01:00")}},
		{name: "spring, in the skipped hour's place", specs: []string{"Sun 02:00-04:00"}, at: utc("2026-03-29 01:00"),
			want: State{Open: true, Closes: utc("2026-03-29 02:00"), Next: utc("2026-04-05 00:00")}},
		{name: "spring, start in the gap moves on", specs: []string{"Sun 02:30-05:00"}, at: utc("2026-03-29 01:29"),
			want: State{Next: utc("2026-03-29 01:30")}},
		{name: "spring, end in the gap moves on", specs: []string{"Sun 01:00-02:30"}, at: utc("2026-03-29 01:20"),
			want: State{Open: true, Closes: utc("2026-03-29 01:30"), Next: utc("2026-04-04 23:00")}},
		{name: "spring, a window inside the gap moves on", specs: []string{"Sun 02:15-02:45"}, at: utc("2026-03-29 01:00"),
			want: State{Next: utc("2026-03-29 01:15")}},
		{name: "spring, a window inside the gap moves on, open", specs: []string{"Sun 02:15-02:45"}, at: utc("2026-03-29 01:15"),
			want: State{Open: true, Closes: utc("2026-03-29 01:45"), Next: utc("2026-04-05 00:15")}},
		{name: "spring, a window that would close before it opens does not open", specs: []string{"Sun 02:30-03:00"}, at: utc("2026-03-28 12:00"),
			want: State{Next: utc("2026-04-05 00:30")}},
		{name: "spring, past midnight into the change", specs: []string{"Sat 23:00-03:00"}, at: utc("2026-03-28 23:00"),
			want: State{Open: true, Closes: utc("2026-03-29 01:00"), Next: utc("2026-04-04 21:00")}},
		{name: "spring, daily", specs: []string{"daily 02:00-04:00"}, at: utc("2026-03-28 03:00"),
			want: State{Next: utc("2026-03-29 01:00")}},
		// Autumn: 02:00 to 03:00 happens twice; a boundary there is its
		// second pass, in CET.
		{name: "autumn, first pass of 02:00 is not in it", specs: []string{"Sun 02:00-04:00"}, at: utc("2026-10-25 00:30"),
			want: State{Next: utc("2026-10-25 01:00")}},
		{name: "autumn, second pass", specs: []string{"Sun 02:00-04:00"}, at: utc("2026-10-25 01:00"),
			want: State{Open: true, Closes: utc("2026-10-25 03:00"), Next: utc("2026-11-01 01:00")}},
		{name: "autumn, end in the repeated hour lasts longer", specs: []string{"Sun 01:00-02:30"}, at: utc("2026-10-24 23:00"),
			want: State{Open: true, Closes: utc("2026-10-25 01:30"), Next: utc("2026-11-01 00:00")}},
		{name: "autumn, past midnight into the change", specs: []string{"Sat 22:00-04:00"}, at: utc("2026-10-24 20:00"),
			want: State{Open: true, Closes: utc("2026-10-25 03:00"), Next: utc("2026-10-31 21:00")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.specs, "Europe/Berlin")
			got := s.State(tt.at)
			if got.Open != tt.want.Open || !got.Next.Equal(tt.want.Next) || !got.Closes.Equal(tt.want.Closes) {
				t.Errorf("State(%s) = %s, want %s", tt.at.In(loc).Format(layout+" MST"), show(got), show(tt.want.in(loc)))
			}
			if s.Open(tt.at) != tt.want.Open {
				t.Errorf("Open(%s) = %v, want %v", tt.at.In(loc).Format(layout+" MST"), !tt.want.Open, tt.want.Open)
			}
			if loc := got.Next.Location().String(); !got.Next.IsZero() && loc != "Europe/Berlin" {
				t.Errorf("Next is in %s, want the schedule's zone", loc)
			}
		})
	}
}

func (s State) in(loc *time.Location) State {
	if !s.Next.IsZero() {
		s.Next = s.Next.In(loc)
	}
	if !s.Closes.IsZero() {
		s.Closes = s.Closes.In(loc)
	}
	return s
}

// checkState checks what State and Open must agree on at t, and returns
// the state. maxNext bounds how far ahead a closed schedule's next opening
// may be.
func checkState(t *testing.T, s *Schedule, at time.Time, maxNext time.Duration) State {
	t.Helper()
	st := s.State(at)
	if st.Open != s.Open(at) {
		t.Fatalf("%v at %s: State says open %v, Open %v", s, at, st.Open, !st.Open)
	}
	if st.Open && s.alwaysOpen() {
		if !st.Next.IsZero() || !st.Closes.IsZero() {
			t.Fatalf("%v at %s: always open, but %s", s, at, show(st))
		}
		return st
	}
	if !st.Open {
		if !st.Closes.IsZero() {
			t.Fatalf("%v at %s: closed, with a close time: %s", s, at, show(st))
		}
		if !st.Next.After(at) || st.Next.Sub(at) > maxNext {
			t.Fatalf("%v at %s: next %s is not in (t, t+%s]", s, at, show(st), maxNext)
		}
		if !s.Open(st.Next) || s.Open(st.Next.Add(-time.Minute)) {
			t.Fatalf("%v at %s: next %s: open then %v, a minute before %v", s, at, show(st), s.Open(st.Next), s.Open(st.Next.Add(-time.Minute)))
		}
		return st
	}
	if !st.Closes.After(at) || s.Open(st.Closes) || !s.Open(st.Closes.Add(-time.Minute)) {
		t.Fatalf("%v at %s: closes %s: open then %v, a minute before %v", s, at, show(st), s.Open(st.Closes), s.Open(st.Closes.Add(-time.Minute)))
	}
	if !st.Next.After(st.Closes) || st.Next.Sub(st.Closes) > maxNext || !s.Open(st.Next) || s.Open(st.Next.Add(-time.Minute)) {
		t.Fatalf("%v at %s: next %s after closing", s, at, show(st))
	}
	return st
}

// TestStateProperties: for many random times, State and Open agree, the
// next opening is after t and a window opens exactly then, and an open
// window closes exactly at Closes.
func TestStateProperties(t *testing.T) {
	schedules := [][]string{
		{"Mon-Fri 02:00-04:00", "Sat 00:00-06:00"},
		{"Sun 23:00-01:00"},
		{"Fri 22:00-02:00", "Sat 01:00-03:00", "Sat 03:00-04:00"},
		{"* 02:30-03:30"},
		{"daily 00:00-23:59"},
		{"Fri-Mon 00:00-24:00", "Wed 12:00-13:00"},
		{"Mon,Wed,Fri 13:37-13:38"},
		{"Sun 02:15-02:45"},
		{"Sun 02:30-03:00"},
		{"Sun 01:30-02:30", "Sun 02:30-03:30"},
	}
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}
	rng := rand.New(rand.NewPCG(1, 2))
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	to := time.Date(2032, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for _, tz := range zones {
		if _, err := time.LoadLocation(tz); err != nil {
			t.Logf("skipping %s: no zoneinfo for it on this system: %v", tz, err)
			continue
		}
		for _, specs := range schedules {
			s := mustParse(t, specs, tz)
			maxNext := 8 * 24 * time.Hour
			if tz != "UTC" {
				maxNext = 15 * 24 * time.Hour
			}
			for range 2000 {
				at := time.Unix(from+rng.Int64N(to-from), rng.Int64N(1e9))
				checkState(t, s, at, maxNext)
			}
			// And around every change of clocks in those years.
			for at := time.Unix(from, 0); at.Unix() < to; {
				_, end := at.In(s.loc).ZoneBounds()
				if end.IsZero() {
					break
				}
				for d := -3 * time.Hour; d <= 3*time.Hour; d += 7 * time.Minute {
					checkState(t, s, end.Add(d), maxNext)
				}
				at = end.Add(time.Hour)
			}
		}
	}
	// In UTC, a window opens within eight days.
	s := mustParse(t, []string{"Mon 00:00-00:01"}, "")
	if st := checkState(t, s, wall(t, time.UTC, "Mon 2026-03-02 00:00").Add(time.Second), 8*24*time.Hour); st.Next.Sub(st.Closes) != 7*24*time.Hour-time.Minute {
		t.Errorf("state %s", show(st))
	}
}

func TestStateJSON(t *testing.T) {
	s := mustParse(t, []string{"Sat 00:00-06:00"}, "")
	tests := []struct {
		at   string
		s    *Schedule
		want string
	}{
		{at: "Fri 2026-03-06 12:00", s: s, want: `{"open":false,"next":"2026-03-07T00:00:00Z"}`},
		{at: "Sat 2026-03-07 01:00", s: s, want: `{"open":true,"next":"2026-03-14T00:00:00Z","closes":"2026-03-07T06:00:00Z"}`},
		{at: "Sat 2026-03-07 01:00", s: nil, want: `{"open":true}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.s.State(wall(t, time.UTC, tt.at)))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("State(%s) = %s, want %s", tt.at, b, tt.want)
		}
	}
}

func TestString(t *testing.T) {
	if got := mustParse(t, []string{"Mon-Fri 02:00-04:00", "Sat 00:00-06:00"}, "").String(); got != "Mon-Fri 02:00-04:00, Sat 00:00-06:00 (UTC)" {
		t.Errorf("String() = %q", got)
	}
	berlin(t)
	if got := mustParse(t, []string{"daily 02:00-04:00"}, "Europe/Berlin").String(); got != "daily 02:00-04:00 (Europe/Berlin)" {
		t.Errorf("String() = %q", got)
	}
	if got := mustParse(t, nil, "Europe/Berlin").String(); got != "always open (no maintenance windows)" {
		t.Errorf("String() = %q", got)
	}
}

// TestNoTzdataEmbedded: the package reads the system's zoneinfo; it does
// not import time/tzdata (about 450 KB in the binary).
func TestNoTzdataEmbedded(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(file), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"time/`+`tzdata"`) {
			t.Errorf("%s imports time/tzdata", filepath.Base(f))
		}
	}
}
