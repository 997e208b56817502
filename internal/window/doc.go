// Package window holds the host's maintenance windows (sync.windows in
// sync.timezone): when changes that disrupt a running pod may be applied.
// Parse reads entries such as "Mon-Fri 02:00-04:00" or "Fri 22:00-02:00"
// into a Schedule; Open tells whether a time falls in a window and State
// also says when the current window closes and when the next one opens.
//
// Windows are wall-clock times in the schedule's location: "02:00-04:00"
// is 02:00 to 04:00 as the clocks on the wall read that day, turned into
// instants with time.Date, so a day when daylight saving time starts or
// ends is whatever the Go time package makes of it (see State). No window
// list means no restriction: a Schedule without entries, and a nil
// *Schedule, is always open, as is one whose windows leave no minute of
// the week out.
//
// Time zones are read from the system's zoneinfo (/usr/share/zoneinfo, or
// the file $ZONEINFO names); time/tzdata is not embedded, to keep the
// binary small. A Schedule is immutable and safe for concurrent use; the
// package holds no state. Parse reads the zone's file (about 10 µs: parse
// once, at start, and keep the Schedule); Open turns four days of entries
// into instants (under a microsecond for a handful), State a month of them
// (about 5 µs and 7 KB for two entries).
package window
