package events

import (
	"fmt"
	"testing"
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
