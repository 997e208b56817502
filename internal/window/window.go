package window

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// minutesPerDay is the length of a wall-clock day in minutes.
const minutesPerDay = 24 * 60

// span is one window on its day, in minutes after that day's 00:00 on the
// wall clock. end is after start; an end past minutesPerDay runs into the
// next day ("22:00-02:00" is 1320 to 1560).
type span struct{ start, end int }

// Schedule is a set of weekly maintenance windows in one location.
type Schedule struct {
	specs []string
	loc   *time.Location
	// days holds the windows that start on each weekday.
	days [7][]span
	// always is set when there is no window, or the windows cover every
	// minute of the week.
	always bool
}

// State is where a time stands in a schedule.
type State struct {
	// Open tells whether a window is open.
	Open bool `json:"open"`
	// Next is when the next window opens: after Closes when Open, zero
	// when the schedule is always open.
	Next time.Time `json:"next,omitzero"`
	// Closes is when the open window closes (merged with every window
	// that overlaps or touches it); zero when closed or always open.
	Closes time.Time `json:"closes,omitzero"`
}

// Error is one bad entry of the schedule's configuration.
type Error struct {
	// Field is the host config key: "sync.windows[1]" or "sync.timezone".
	Field string
	// Value is the entry as written.
	Value string
	// Detail says what is wrong with it.
	Detail string
}

func (e *Error) Error() string { return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Detail) }

// ErrorList is every bad entry Parse found, in config order (the windows,
// then the time zone).
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Parse reads the window entries specs (sync.windows) in the time zone
// timezone (sync.timezone: an IANA name such as "Europe/Berlin", "" for
// UTC). Each entry is "DAYS HH:MM-HH:MM": DAYS is a day ("Mon",
// "monday"), a range ("Mon-Fri"; "Fri-Mon" wraps over the weekend), a
// comma list of those ("Mon,Wed,Fri-Sat"), or "*" or "daily" for every
// day. The times are 24-hour wall-clock times; the end may be 24:00, and
// an end before the start runs past midnight into the next day ("Fri
// 22:00-02:00" is Friday 22:00 to Saturday 02:00). No entries: always
// open. The error is an ErrorList naming every bad entry.
func Parse(specs []string, timezone string) (*Schedule, error) {
	s := &Schedule{loc: time.UTC}
	var errs ErrorList
	for i, spec := range specs {
		days, sp, detail := parseEntry(spec)
		if detail != "" {
			errs = append(errs, &Error{Field: fmt.Sprintf("sync.windows[%d]", i), Value: spec, Detail: detail})
			continue
		}
		for d, on := range days {
			if on {
				s.days[d] = append(s.days[d], sp)
			}
		}
		s.specs = append(s.specs, strings.TrimSpace(spec))
	}
	if timezone != "" {
		loc, err := time.LoadLocation(timezone)
		if err != nil {
			errs = append(errs, &Error{Field: "sync.timezone", Value: timezone, Detail: "unknown time zone"})
		} else {
			s.loc = loc
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	s.always = len(s.specs) == 0 || coversWeek(s.days)
	return s, nil
}

// parseEntry reads one "DAYS HH:MM-HH:MM" entry; detail says what is wrong
// with it, "" when nothing is.
func parseEntry(spec string) (days [7]bool, sp span, detail string) {
	f := strings.Fields(spec)
	if len(f) != 2 {
		return days, sp, `want DAYS HH:MM-HH:MM, e.g. "Mon-Fri 02:00-04:00" (no spaces inside DAYS)`
	}
	if days, detail = parseDays(f[0]); detail != "" {
		return days, sp, detail
	}
	sp, detail = parseTimes(f[1])
	return days, sp, detail
}

// parseDay reads a day's English name or its three-letter abbreviation,
// in any case.
func parseDay(name string) (time.Weekday, string) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if full := d.String(); strings.EqualFold(name, full) || strings.EqualFold(name, full[:3]) {
			return d, ""
		}
	}
	return 0, fmt.Sprintf("unknown day %q (Mon to Sun, Monday to Sunday, * or daily)", name)
}

// parseDays reads DAYS: a comma list of days, day ranges, * and daily.
func parseDays(field string) (days [7]bool, detail string) {
	for part := range strings.SplitSeq(field, ",") {
		if part == "" {
			return days, fmt.Sprintf("empty day in %q", field)
		}
		if part == "*" || strings.EqualFold(part, "daily") {
			days = [7]bool{true, true, true, true, true, true, true}
			continue
		}
		first, last, isRange := strings.Cut(part, "-")
		if !isRange {
			last = first
		} else if first == "" || last == "" {
			return days, fmt.Sprintf("day range %q needs a day on each side", part)
		}
		from, detail := parseDay(first)
		if detail != "" {
			return days, detail
		}
		to, detail := parseDay(last)
		if detail != "" {
			return days, detail
		}
		for d := from; ; d = (d + 1) % 7 {
			days[d] = true
			if d == to {
				break
			}
		}
	}
	return days, ""
}

// parseTimes reads HH:MM-HH:MM.
func parseTimes(field string) (span, string) {
	start, end, ok := strings.Cut(field, "-")
	if !ok {
		return span{}, fmt.Sprintf("time range %q: want HH:MM-HH:MM", field)
	}
	s, ok := minuteOfDay(start)
	if !ok {
		if start == "24:00" {
			return span{}, `start "24:00" is not a time of day (HH:MM); 24:00 is only an end, use 00:00`
		}
		return span{}, fmt.Sprintf("start %q is not a time of day (HH:MM)", start)
	}
	e, ok := minuteOfDay(end)
	if end == "24:00" {
		e, ok = minutesPerDay, true
	}
	if !ok {
		return span{}, fmt.Sprintf("end %q is not a time of day (HH:MM, or 24:00)", end)
	}
	switch {
	case e == s:
		return span{}, "empty window; use 00:00-24:00 for a whole day"
	case e < s:
		e += minutesPerDay // runs past midnight
	}
	return span{start: s, end: e}, ""
}

// minuteOfDay reads a 24-hour HH:MM time.
func minuteOfDay(hhmm string) (int, bool) {
	t, err := time.Parse("15:04", hhmm)
	if err != nil {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}

// coversWeek tells whether the windows leave no minute of the week closed.
func coversWeek(days [7][]span) bool {
	const week = 7 * minutesPerDay
	var covered [week]bool
	n := 0
	for d, spans := range days {
		for _, sp := range spans {
			for m := sp.start; m < sp.end; m++ {
				i := (d*minutesPerDay + m) % week
				if !covered[i] {
					covered[i] = true
					n++
				}
			}
		}
	}
	return n == week
}

// alwaysOpen tells whether s never closes (no windows, or every minute).
func (s *Schedule) alwaysOpen() bool { return s == nil || s.always }

// interval is one window's occurrence: open from start, closed again at end.
type interval struct{ start, end time.Time }

// occurrences returns the windows that start on the wall-clock days from
// first to last days after t's day (first may be negative), as instants,
// in no particular order. An occurrence that time.Date's normalisation
// leaves empty (a window inside the hour skipped when daylight saving
// time starts) does not happen.
func (s *Schedule) occurrences(t time.Time, first, last int) []interval {
	y, m, d := t.In(s.loc).Date()
	var out []interval
	for k := first; k <= last; k++ {
		wd := time.Date(y, m, d+k, 12, 0, 0, 0, time.UTC).Weekday()
		for _, sp := range s.days[wd] {
			start := time.Date(y, m, d+k, 0, sp.start, 0, 0, s.loc)
			end := time.Date(y, m, d+k, 0, sp.end, 0, 0, s.loc)
			if end.After(start) {
				out = append(out, interval{start: start, end: end})
			}
		}
	}
	return out
}

// Open tells whether a window is open at t: whether t is in
// [start, end) of one of its occurrences.
func (s *Schedule) Open(t time.Time) bool {
	if s.alwaysOpen() {
		return true
	}
	// A window ends at most two wall-clock days after its day began; the
	// day before and after t's are read too, for zones whose clocks have
	// jumped a whole day or turned back over midnight.
	for _, o := range s.occurrences(t, -2, 1) {
		if !t.Before(o.start) && t.Before(o.end) {
			return true
		}
	}
	return false
}

// horizon is how many days after t's State looks for the times it
// reports. A window opens at least every week, and every other week when
// it lies in the hour skipped by a change to daylight saving time; an
// open stretch that is not the whole week ends within two weeks as well.
const horizon = 31

// State tells whether a window is open at t, when it closes, and when the
// next one opens. Windows that overlap or touch are one: Closes is when
// the last of them closes. The times are in the schedule's location.
// Next is within eight days of t, or fifteen when the week's only window
// does not open on the day daylight saving time starts (below).
//
// On a day when daylight saving time starts or ends, a window's start and
// end are what time.Date makes of those wall-clock times (Go 1.26). A
// time in the skipped hour moves forward by the hour: with clocks going
// from 02:00 to 03:00, "02:00-04:00" is 03:00 to 04:00, "02:30-05:00"
// 03:30 to 05:00, "02:15-02:45" 03:15 to 03:45, and "02:30-03:00", which
// would close at 03:00 before it opens at 03:30, does not open that day.
// A time in the repeated hour is its second pass, in standard time: with
// clocks going from 03:00 back to 02:00, "02:00-04:00" opens at the
// second 02:00 and lasts two hours, "01:00-02:30" closes at the second
// 02:30 and lasts two and a half.
func (s *Schedule) State(t time.Time) State {
	if s.alwaysOpen() {
		return State{Open: true}
	}
	occ := s.occurrences(t, -2, horizon)
	slices.SortFunc(occ, func(a, b interval) int { return a.start.Compare(b.start) })
	var merged []interval
	for _, o := range occ {
		if n := len(merged); n > 0 && !o.start.After(merged[n-1].end) {
			if o.end.After(merged[n-1].end) {
				merged[n-1].end = o.end
			}
			continue
		}
		merged = append(merged, o)
	}
	for i, m := range merged {
		if !m.end.After(t) {
			continue
		}
		if m.start.After(t) {
			return State{Next: m.start}
		}
		st := State{Open: true, Closes: m.end}
		if i+1 < len(merged) {
			st.Next = merged[i+1].start
		}
		return st
	}
	// Not reached: every window opens within the horizon.
	return State{}
}

// String describes the schedule for logs: its entries and time zone.
func (s *Schedule) String() string {
	if s == nil || len(s.specs) == 0 {
		return "always open (no maintenance windows)"
	}
	return strings.Join(s.specs, ", ") + " (" + s.loc.String() + ")"
}
