package manifest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// countingReader yields n bytes of YAML comment and counts what was read.
type countingReader struct {
	n, read int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	for i := range k {
		p[i] = '#'
	}
	r.read += k
	return int(k), nil
}

func TestReadLimited(t *testing.T) {
	const limit = manifest.MaxSize
	tests := []struct {
		name     string
		size     int64
		wantErr  bool
		wantRead int64
	}{
		{name: "empty", size: 0, wantRead: 0},
		{name: "small", size: 100, wantRead: 100},
		{name: "exactly the limit", size: limit, wantRead: limit},
		{name: "one byte over", size: limit + 1, wantErr: true, wantRead: limit + 1},
		{name: "20 MiB", size: 20 << 20, wantErr: true, wantRead: limit + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &countingReader{n: tt.size}
			data, err := manifest.ReadLimited(r, limit)
			if tt.wantErr {
				if !errors.Is(err, manifest.ErrTooLarge) {
					t.Fatalf("err = %v, want ErrTooLarge", err)
				}
				if want := "larger than the size limit of 10485760 bytes"; err.Error() != want {
					t.Errorf("err = %q, want %q", err, want)
				}
				if data != nil {
					t.Errorf("got %d bytes with the error", len(data))
				}
			} else if err != nil || int64(len(data)) != tt.size {
				t.Fatalf("ReadLimited = %d bytes, %v; want %d bytes", len(data), err, tt.size)
			}
			if r.read != tt.wantRead {
				t.Errorf("read %d bytes from the reader, want %d (limit+1 at most)", r.read, tt.wantRead)
			}
		})
	}
}

func TestReadLimitedReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := manifest.ReadLimited(io.MultiReader(strings.NewReader("id: a\n"), errReader{boom}), 100)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int64) string {
		t.Helper()
		p := filepath.Join(dir, name)
		line := []byte("# a comment line in a manifest file, forty-nine b\n")
		data := bytes.Repeat(line, int(size)/len(line)+1)[:size]
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		path    string
		size    int64
		wantErr string
	}{
		{name: "small", path: write("small.yaml", 1000), size: 1000},
		{name: "exactly the limit", path: write("limit.yaml", manifest.MaxSize), size: manifest.MaxSize},
		// The error names the file's size: it comes from the size check
		// before reading, not from reading 10 MiB and one byte.
		{name: "20 MiB", path: write("big.yaml", 20<<20), wantErr: "20971520 bytes: larger than the size limit of 10485760 bytes"},
		{name: "one byte over", path: write("over.yaml", manifest.MaxSize+1), wantErr: "10485761 bytes: larger than the size limit of 10485760 bytes"},
		{name: "missing", path: filepath.Join(dir, "missing.yaml"), wantErr: "open " + filepath.Join(dir, "missing.yaml") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := manifest.ReadFile(tt.path)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ReadFile = %v, want %s", err, tt.wantErr)
				}
				if strings.Contains(tt.wantErr, "size limit") && !errors.Is(err, manifest.ErrTooLarge) {
					t.Errorf("error does not wrap ErrTooLarge")
				}
				return
			}
			if err != nil || int64(len(data)) != tt.size {
				t.Fatalf("ReadFile = %d bytes, %v; want %d bytes", len(data), err, tt.size)
			}
		})
	}
}

// TestReadFileSparse gives ReadFile a file far too large to read: only a
// size check before reading can refuse it at once.
func TestReadFileSparse(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	const size = 64 << 30
	if err := f.Truncate(size); err != nil {
		t.Skipf("cannot make a sparse file here: %v", err)
	}
	_, err = manifest.ReadFile(p)
	if want := fmt.Sprintf("%d bytes: larger than the size limit of 10485760 bytes", int64(size)); err == nil || err.Error() != want {
		t.Errorf("ReadFile = %v, want %s", err, want)
	}
}
