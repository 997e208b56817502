package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "k.key")
	if _, err := ReadKey(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadKey of a missing file: %v, want fs.ErrNotExist", err)
	}
	key, err := NewKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v mode %v, want 0600", err, fi.Mode())
	}
	got, err := ReadKey(path)
	if err != nil || !bytes.Equal(got, key) || len(got) != KeySize {
		t.Fatalf("ReadKey: %x %v, want %x", got, err, key)
	}
}

func TestReadKeyRefusesWhatIsNoKey(t *testing.T) {
	dir := t.TempDir()
	good := strings.Repeat("ab", KeySize)
	for name, content := range map[string]string{
		"crlf":      good + "\r\n",
		"short":     good[:62] + "\n",
		"long":      good + "00\n",
		"not hex":   strings.Repeat("zz", KeySize) + "\n",
		"empty":     "",
		"two lines": good + "\n" + good + "\n",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadKey(path)
		if (err == nil) != (name == "crlf") {
			t.Errorf("%s: ReadKey error %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), good[:8]) {
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
}
