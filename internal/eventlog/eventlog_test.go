package eventlog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
)

func TestLogKeepsNewestInOrder(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		record int
		want   []string
	}{
		{name: "empty", size: 3, record: 0, want: nil},
		{name: "partial", size: 3, record: 2, want: []string{"p0", "p1"}},
		{name: "exact", size: 3, record: 3, want: []string{"p0", "p1", "p2"}},
		{name: "wrapped", size: 3, record: 7, want: []string{"p4", "p5", "p6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLog(tt.size)
			for i := 0; i < tt.record; i++ {
				l.Record(Event{Type: Create, Pod: fmt.Sprintf("p%d", i)})
			}
			got := l.List()
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events, want %d", len(got), len(tt.want))
			}
			for i, e := range got {
				if e.Pod != tt.want[i] || e.Time.IsZero() {
					t.Errorf("event %d = %+v, want pod %s with a time", i, e, tt.want[i])
				}
			}
		})
	}
}

func TestSubscribeNeverBlocks(t *testing.T) {
	l := NewLog(10)
	ch, cancel := l.Subscribe(1)
	t.Cleanup(cancel)
	for i := 0; i < 5; i++ {
		l.Record(Event{Type: Create})
	}
	if e := <-ch; e.Seq != 1 {
		t.Errorf("first event seq = %d, want 1", e.Seq)
	}
	select {
	case e := <-ch:
		t.Errorf("a full subscriber got a later event: %+v", e)
	default:
	}
}

// TestRecordCapsEventText (issue 12, finding 6): an error of 24 MB was kept
// whole in an event. Every text field of an event is cut to its bound.
func TestRecordCapsEventText(t *testing.T) {
	huge := strings.Repeat("x", 24<<20)
	tests := []struct {
		name  string
		event Event
		field func(Event) string
		max   int
	}{
		{name: "message", event: Event{Type: SourceError, Message: huge}, field: func(e Event) string { return e.Message }, max: MaxMessageBytes},
		{name: "reason", event: Event{Type: SourceError, Reason: huge}, field: func(e Event) string { return e.Reason }, max: MaxFieldBytes},
		{name: "pod", event: Event{Type: Create, Pod: huge}, field: func(e Event) string { return e.Pod }, max: MaxFieldBytes},
		{name: "container", event: Event{Type: Create, Container: huge}, field: func(e Event) string { return e.Container }, max: MaxFieldBytes},
		{name: "type", event: Event{Type: huge}, field: func(e Event) string { return e.Type }, max: MaxFieldBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLog(10)
			ch, cancel := l.Subscribe(1)
			t.Cleanup(cancel)
			l.Record(tt.event)
			got := l.List()
			if len(got) != 1 {
				t.Fatalf("got %d events, want 1", len(got))
			}
			if n := len(tt.field(got[0])); n > tt.max || n == 0 {
				t.Errorf("listed %s is %d bytes, want 1..%d", tt.name, n, tt.max)
			}
			if n := len(tt.field(<-ch)); n > tt.max {
				t.Errorf("subscriber's %s is %d bytes, want at most %d", tt.name, n, tt.max)
			}
		})
	}
}

// TestLogBoundedByBytes (issue 12, finding 6): three 24 MB errors kept 73 MB
// in the ring, bounded by count only. The ring also keeps at most MaxBytes
// of events, dropping the oldest, and never drops the newest.
func TestLogBoundedByBytes(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		record  int
		msgSize int
	}{
		{name: "three huge errors", size: 1000, record: 3, msgSize: 24 << 20},
		{name: "1000 errors of 4 KiB", size: 1000, record: 1000, msgSize: 4 << 10},
		{name: "5000 errors of 4 KiB, count 1000", size: 1000, record: 5000, msgSize: 4 << 10},
		{name: "small events stay bounded by count", size: 10, record: 50, msgSize: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLog(tt.size)
			msg := strings.Repeat("m", tt.msgSize)
			for i := range tt.record {
				l.Record(Event{Type: SourceError, Pod: fmt.Sprintf("p%d", i), Message: msg})
			}
			got := l.List()
			total := 0
			for _, e := range got {
				total += eventBytes(e)
			}
			if total > MaxBytes {
				t.Errorf("ring holds %d bytes in %d events, want at most %d", total, len(got), MaxBytes)
			}
			if len(got) > tt.size {
				t.Errorf("ring holds %d events, want at most %d", len(got), tt.size)
			}
			if len(got) == 0 || got[len(got)-1].Pod != fmt.Sprintf("p%d", tt.record-1) {
				t.Fatalf("newest event missing: %d events", len(got))
			}
			for i := 1; i < len(got); i++ {
				if got[i].Seq != got[i-1].Seq+1 {
					t.Fatalf("events %d and %d not consecutive: seq %d, %d", i-1, i, got[i-1].Seq, got[i].Seq)
				}
			}
			if want := min(tt.record, tt.size); tt.msgSize <= 10 && len(got) != want {
				t.Errorf("kept %d small events, want %d", len(got), want)
			}
		})
	}
}

func TestEventCarriesAllSixKeys(t *testing.T) {
	for _, ev := range []Event{
		{Type: SourceError, Message: "git: unreachable"},
		{Type: Create, Pod: "web", Container: "nginx"},
		{},
	} {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var keys map[string]any
		if err := json.Unmarshal(b, &keys); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"time", "type", "pod", "container", "reason", "message"} {
			if _, ok := keys[k]; !ok {
				t.Errorf("%s: key %q missing", b, k)
			}
		}
		if len(keys) != 6 {
			t.Errorf("%s: %d keys, want 6", b, len(keys))
		}
	}
}

// TestRecordDatesOnTheClock: an event recorded without a time gets the
// log's clock's, one with a time keeps it.
func TestRecordDatesOnTheClock(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clock.NewFake(t0)
	l := NewLog(10).WithClock(clk)
	l.Record(Event{Type: Create})
	clk.Advance(time.Minute)
	given := t0.Add(time.Hour)
	l.Record(Event{Type: Create, Time: given})
	got := l.List()
	if len(got) != 2 || !got[0].Time.Equal(t0) || !got[1].Time.Equal(given) {
		t.Errorf("event times %v, want the clock's %v and the given %v", got, t0, given)
	}
}
