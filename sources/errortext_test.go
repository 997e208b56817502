package sources

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
)

func TestErrorTextBounded(t *testing.T) {
	many := func(n int, detail string) error {
		var errs *multierror.Error
		for i := range n {
			errs = multierror.Append(errs, &manifest.Error{Origin: manifest.Origin{Source: "s", File: fmt.Sprintf("f%d.yaml", i)}, Detail: detail})
		}
		return errs
	}
	tests := []struct {
		name       string
		err        error
		want       string // the whole text, when set
		wantSuffix string
	}{
		{name: "one error", err: many(1, "bad"), want: "s:f0.yaml: bad"},
		{name: "two errors", err: many(2, "bad"), want: "s:f0.yaml: bad; s:f1.yaml: bad"},
		{name: "400000 errors", err: many(400000, "unknown field"), wantSuffix: "more errors"},
		{name: "100 long errors", err: many(100, strings.Repeat("d", 2000)), wantSuffix: "; ... and 93 more errors"},
		{name: "a plain error over the bound", err: errors.New(strings.Repeat("e", 1<<20)), wantSuffix: "more bytes)"},
		{name: "a plain error on several lines", err: errors.New("a\nb"), want: "a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ErrorText(tt.err)
			if len(got) > textcap.ErrorTextBytes {
				t.Errorf("ErrorText is %d bytes, want at most %d", len(got), textcap.ErrorTextBytes)
			}
			if strings.Contains(got, "\n") {
				t.Errorf("ErrorText spans lines: %.200q", got)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("ErrorText = %q, want %q", got, tt.want)
			}
			if !strings.HasSuffix(got, tt.wantSuffix) {
				t.Errorf("ErrorText ends %q, want the suffix %q", got[max(0, len(got)-60):], tt.wantSuffix)
			}
		})
	}
}
