package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestWindows: sync.windows is empty and sync.timezone UTC by default
// (always open); both are read from the file or the environment; a bad
// entry or zone stops Load with the key named, every one at once.
func TestWindows(t *testing.T) {
	t.Setenv("HOSTLET_CONFIG", "")
	t.Run("default", func(t *testing.T) {
		c, err := Load(writeConfig(t, "hostname: h\n"))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Sync.Windows) != 0 || c.Sync.Timezone != "UTC" {
			t.Errorf("sync.windows = %q, sync.timezone = %q; want none and UTC", c.Sync.Windows, c.Sync.Timezone)
		}
		s, err := c.Windows()
		if err != nil {
			t.Fatal(err)
		}
		if st := s.State(time.Now()); !st.Open || !st.Next.IsZero() || !st.Closes.IsZero() {
			t.Errorf("no windows: state %+v, want always open", st)
		}
	})
	t.Run("file", func(t *testing.T) {
		if _, err := time.LoadLocation("Europe/Berlin"); err != nil {
			t.Fatalf("no zoneinfo for Europe/Berlin on this system (apt-get install -y tzdata, or set $ZONEINFO): %v", err)
		}
		c, err := Load(writeConfig(t, `
sync:
  windows: ["Mon-Fri 02:00-04:00", "Sat 00:00-06:00"]
  timezone: Europe/Berlin
`))
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Windows()
		if err != nil {
			t.Fatal(err)
		}
		if got := s.String(); got != "Mon-Fri 02:00-04:00, Sat 00:00-06:00 (Europe/Berlin)" {
			t.Errorf("schedule %s", got)
		}
		// Monday 2026-03-02 02:30 in Berlin is 01:30 UTC.
		if !s.Open(time.Date(2026, 3, 2, 1, 30, 0, 0, time.UTC)) || s.Open(time.Date(2026, 3, 2, 3, 30, 0, 0, time.UTC)) {
			t.Error("the windows are not read in Europe/Berlin")
		}
	})
	t.Run("env", func(t *testing.T) {
		// The environment's list is split on commas, as every list key's is.
		t.Setenv("HOSTLET_SYNC_WINDOWS", "Mon-Fri 02:00-04:00,Sat 00:00-06:00")
		t.Setenv("HOSTLET_SYNC_TIMEZONE", "Etc/GMT-2")
		c, err := Load(writeConfig(t, "hostname: h\n"))
		if err != nil {
			t.Fatalf("%v (without zoneinfo: apt-get install -y tzdata, or set $ZONEINFO)", err)
		}
		if want := []string{"Mon-Fri 02:00-04:00", "Sat 00:00-06:00"}; !reflect.DeepEqual(c.Sync.Windows, want) || c.Sync.Timezone != "Etc/GMT-2" {
			t.Errorf("sync.windows = %q, sync.timezone = %q", c.Sync.Windows, c.Sync.Timezone)
		}
	})
	bad := []struct {
		name string
		body string
		want []string
	}{
		{name: "bad window", body: "sync:\n  windows: [\"Mon-Fri 02:00-04:00\", \"Sat 25:00-06:00\"]\n",
			want: []string{`key "sync.windows[1]": "Sat 25:00-06:00": start "25:00" is not a time of day (HH:MM)`}},
		{name: "bad timezone", body: "sync:\n  timezone: Mars/Base\n",
			want: []string{`key "sync.timezone": "Mars/Base": unknown time zone`}},
		{name: "empty window", body: "sync:\n  windows: [\"Sun 03:00-03:00\"]\n",
			want: []string{`key "sync.windows[0]": "Sun 03:00-03:00": empty window; use 00:00-24:00 for a whole day`}},
		{name: "all at once", body: "sync:\n  windows: [\"Moon 02:00-04:00\", \"Sat 02:00\"]\n  timezone: Mars/Base\n  concurrency: 0\n",
			want: []string{
				`key "sync.windows[0]": "Moon 02:00-04:00": unknown day "Moon"`,
				`key "sync.windows[1]": "Sat 02:00": time range "02:00": want HH:MM-HH:MM`,
				`key "sync.timezone": "Mars/Base": unknown time zone`,
				`key "sync.concurrency"`,
			}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, tc.body)
			_, err := Load(p)
			if err == nil {
				t.Fatal("Load: no error")
			}
			if !strings.HasPrefix(err.Error(), "config "+p+": ") {
				t.Errorf("error %q does not name the file", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}
