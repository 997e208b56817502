package datafolder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hostlet/hostlet/internal/atomicfile"
)

// indexFile, in the instance's folder, lists the data folders Ensure has
// made (JSON, their relative paths): a container may change anything in
// one it mounts, including a folder on the path of another nested in it,
// so no data folder is made inside another, nor around one.
const indexFile = ".hostlet-data-folders.json"

// maxIndexBytes bounds the index read.
const maxIndexBytes = 4 << 20

// ErrNested: a data folder would be inside another (or hold one).
var ErrNested = errors.New("is inside another data folder, or holds one: a container mounting the outer one could change the inner one's path (swap a folder of it for a link) and have the engine mount what the link names: not made")

// index reads the data folders made so far (none when there is no index:
// folders made by a hostlet before it are not known).
func (s *Store) index() ([]string, error) {
	path := filepath.Join(s.root, indexFile)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the data folders' index: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxIndexBytes {
		return nil, fmt.Errorf("the data folders' index %s is not a file of at most %d bytes", path, maxIndexBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the data folders' index: %w", err)
	}
	var rels []string
	if err := json.Unmarshal(data, &rels); err != nil {
		return nil, fmt.Errorf("the data folders' index %s: %w", path, err)
	}
	return rels, nil
}

// record checks that rel nests with none of the data folders made so far
// and adds it to the index.
func (s *Store) record(rel string) error {
	rels, err := s.index()
	if err != nil {
		return err
	}
	for _, r := range rels {
		if r == rel {
			return nil
		}
		if within(rel, r) || within(r, rel) {
			return fmt.Errorf("data folder %s (beside %s): %w", rel, r, ErrNested)
		}
	}
	rels = append(rels, rel)
	slices.Sort(rels)
	data, err := json.Marshal(rels)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(s.root, indexFile), data, 0o600); err != nil {
		return fmt.Errorf("record data folder %s: %w", rel, err)
	}
	return nil
}

// forget drops from the index the data folders at or under top.
func (s *Store) forget(top string) error {
	rels, err := s.index()
	if err != nil || len(rels) == 0 {
		return err
	}
	kept := slices.DeleteFunc(rels, func(r string) bool { return r == top || within(r, top) })
	data, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(s.root, indexFile), data, 0o600)
}

// within reports whether relative path a is strictly inside b.
func within(a, b string) bool {
	return strings.HasPrefix(a, b+"/")
}
