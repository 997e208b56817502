package imageupdate

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// position is a scalar's line and column, as the YAML parser gives them.
type position struct{ line, column int }

// verifyYAML checks that newData parses as oldData does but for the
// scalars at the positions of want, which now hold want's values: an
// edit landed where it was meant to and nowhere else (a line break the
// editor counted otherwise than the parser would show here).
func verifyYAML(oldData, newData []byte, want map[position]string) error {
	oldDocs, err := documents(oldData)
	if err != nil {
		return err
	}
	newDocs, err := documents(newData)
	if err != nil {
		return fmt.Errorf("the edited file no longer parses: %w", err)
	}
	if len(oldDocs) != len(newDocs) {
		return errors.New("the edited file has another number of documents")
	}
	seen := 0
	for i := range oldDocs {
		if err := sameNodes(oldDocs[i], newDocs[i], want, &seen); err != nil {
			return err
		}
	}
	if seen != len(want) {
		return fmt.Errorf("%d of %d edits landed on the image they were meant for", seen, len(want))
	}
	return nil
}

func documents(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*yaml.Node
	for len(out) < maxDocuments {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, &doc)
	}
	return out, nil
}

// sameNodes walks a and b together (bounded by the documents' sizes).
func sameNodes(a, b *yaml.Node, want map[position]string, seen *int) error {
	if a.Kind != b.Kind || len(a.Content) != len(b.Content) {
		return fmt.Errorf("the edit changed the file's structure at line %d", a.Line)
	}
	if a.Kind == yaml.ScalarNode && a.Value != b.Value {
		v, ok := want[position{a.Line, a.Column}]
		if !ok || v != b.Value {
			return fmt.Errorf("the edit changed the value at line %d, column %d, which is not the image's", a.Line, a.Column)
		}
		*seen++
	}
	for i := range a.Content {
		if err := sameNodes(a.Content[i], b.Content[i], want, seen); err != nil {
			return err
		}
	}
	return nil
}
