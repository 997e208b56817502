package exepages

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestCleanReadOnlyMappingsAreTheExecutablesUnwrittenOnes(t *testing.T) {
	smaps, err := os.ReadFile("testdata/smaps")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want []mapping
	}{
		// code and read-only data; not the data segment, not the
		// read-only segment holding a private copy, not another file's.
		{"/usr/bin/hostlet", []mapping{{0x400000, 0xff3000}, {0xff3000, 0x1d1e000}}},
		{"/opt/my tools/hostlet", []mapping{{0x7f0000200000, 0x7f0000300000}}},
		{"/usr/bin/other", nil},
		{"", nil},
	} {
		if got := cleanReadOnlyMappings(smaps, tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("mappings of %q: %x, want %x", tc.path, got, tc.want)
		}
	}
}

// TestReleaseKeepsTheProcessRunningWithFewerPagesMapped releases the test
// binary's own pages and goes on running it.
func TestReleaseKeepsTheProcessRunningWithFewerPagesMapped(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	before := residentFileKB(t)
	advised, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if advised == 0 {
		t.Fatal("Release advised no mapping of the test binary")
	}
	after := residentFileKB(t)
	if after >= before {
		t.Errorf("file-backed resident set %d kB after Release, %d kB before", after, before)
	}
	if got := strings.Repeat("ok", 2); got != "okok" { // code runs from the released pages
		t.Errorf("got %q", got)
	}
}

func residentFileKB(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func FuzzCleanReadOnlyMappings(f *testing.F) {
	smaps, err := os.ReadFile("testdata/smaps")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(smaps, "/usr/bin/hostlet")
	f.Add([]byte("1-2 r-xp 0 0 0 x\nAnonymous: 0 kB\n"), "x")
	f.Fuzz(func(t *testing.T, smaps []byte, path string) {
		for _, m := range cleanReadOnlyMappings(smaps, path) {
			if m.end <= m.start {
				t.Fatalf("mapping %x-%x is empty or reversed", m.start, m.end)
			}
		}
	})
}
