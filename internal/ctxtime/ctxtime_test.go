package ctxtime

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{name: "passes", ctx: context.Background(), d: time.Millisecond, want: true},
		{name: "zero", ctx: context.Background(), d: 0, want: true},
		{name: "cancelled", ctx: cancelled, d: time.Hour, want: false},
		{name: "cancelled zero", ctx: cancelled, d: 0, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sleep(tt.ctx, tt.d); got != tt.want {
				t.Errorf("Sleep = %v, want %v", got, tt.want)
			}
		})
	}
}
