package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/sources"
)

// TestSourceErrorBoundedEverywhere (issue 12, finding 6): a 3 MB file made a
// 24 MB error in /status, in an event and in a log line. The same files,
// read by a file source and merged with the logger `hostlet run` builds,
// now give a status error of at most textcap.ErrorTextBytes, an event
// message of at most eventlog.MaxMessageBytes, and log lines whose values
// are at most textcap.LogValueBytes.
func TestSourceErrorBoundedEverywhere(t *testing.T) {
	const size = 3 << 20
	big := strings.Repeat("A", size)
	files := []struct {
		name string
		data string
	}{
		{name: "huge JSON key", data: `{"version":"v1beta1","id":"a","` + big + `":1}`},
		{name: "huge id", data: "version: v1beta1\nid: " + big + "\nbogus: 1\n"},
		{name: "huge garbage line", data: big + ": : :\n"},
		{name: "400000 bad list items", data: "[" + strings.TrimSuffix(strings.Repeat(`{"A":1},`, size/8), ",") + "]"},
		{name: "300000 garbage documents", data: strings.Repeat("---\n: : :\n", size/10)},
	}
	// maxReason is the most one error renders to (manifest.Error).
	const maxReason = textcap.OriginBytes + textcap.IDBytes + textcap.FieldBytes + textcap.DetailBytes + 16
	// maxLine: a message, three short attributes and one value at its bound.
	const maxLine = textcap.LogValueBytes + 1<<10
	for _, format := range []string{"text", "json"} {
		for _, f := range files {
			t.Run(format+"/"+f.name, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "big.yaml"), []byte(f.data), 0o644); err != nil {
					t.Fatal(err)
				}
				var logs bytes.Buffer
				cfg := &config.Config{Log: config.LogOptions{Level: "info", Format: format}}
				log := newLogger(&logs, cfg)

				res, err := sources.ReadTree(context.Background(), "", []string{dir}, "local", nil)
				m, err2 := sources.NewMerger([]sources.SourceInfo{{Name: "local", Type: config.TypeFile}}, sources.MergeOptions{}, log)
				if err2 != nil {
					t.Fatal(err2)
				}
				m.Apply(sources.Update{Source: "local", Revision: res.Revision, Manifests: res.Manifests, Err: err})
				st := m.State()
				msg := st.Sources[0].Error
				if err != nil && (msg == "" || len(msg) > textcap.ErrorTextBytes) {
					t.Errorf("status error is %d bytes, want 1..%d", len(msg), textcap.ErrorTextBytes)
				}
				if err == nil {
					// A manifest with an id: rejected, with its reasons.
					if len(st.Rejected) == 0 {
						t.Fatalf("no read error and no rejection for a bad 3 MB file")
					}
					for _, rj := range st.Rejected {
						for _, r := range rj.Reasons {
							if len(r) > maxReason {
								t.Errorf("rejection reason is %d bytes, want at most %d: %.300s", len(r), maxReason, r)
							}
							msg += r
						}
					}
				}

				ev := eventlog.NewLog(1000)
				ev.Record(eventlog.Event{Type: eventlog.SourceError, Reason: "source local", Message: msg})
				if got := ev.List()[0].Message; len(got) > eventlog.MaxMessageBytes {
					t.Errorf("event message is %d bytes, want at most %d", len(got), eventlog.MaxMessageBytes)
				}

				lines := strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
				if err != nil && !strings.Contains(logs.String(), "source error") {
					t.Fatalf("no source error logged: %.300s", logs.String())
				}
				for _, line := range lines {
					if len(line) > maxLine {
						t.Errorf("log line is %d bytes, want at most %d: %.300s", len(line), maxLine, line)
					}
				}
			})
		}
	}
}
