package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// Bounds of a file's structure, checked before sops reads it: sops's
// stores expand YAML aliases, recurse once per level and per flattened
// key part, and look up INI keys one by one, so a small crafted file
// could take the helper's memory or minutes. A file sops writes is far
// inside them.
const (
	maxDepth       = 64
	maxNodes       = 1_000_000
	maxMappingKeys = 20_000
	maxKeyParts    = 64
	maxINIKeys     = 20_000
)

// errStructure is the error of a file past the bounds.
var errStructure = errors.New("too much structure for a SOPS file (nesting, keys or aliases)")

// precheck refuses data, a file of format, that is past the bounds.
func precheck(format string, data []byte) error {
	switch format {
	case "yaml":
		return precheckYAML(data)
	case "json", "binary":
		return precheckJSON(data)
	case "dotenv":
		return precheckFlat(data, false)
	case "ini":
		return precheckFlat(data, true)
	}
	return nil
}

// precheckYAML walks every document's nodes: no alias, no deeper than
// maxDepth, no mapping of more than maxMappingKeys keys, at most maxNodes
// in all.
func precheckYAML(data []byte) error {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	budget := maxNodes
	for {
		var doc yaml3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return errors.New("not YAML")
		}
		if err := walkNode(&doc, 0, &budget); err != nil {
			return err
		}
	}
}

func walkNode(n *yaml3.Node, depth int, budget *int) error {
	if *budget--; *budget < 0 || depth > maxDepth || n.Kind == yaml3.AliasNode || len(n.Content) > 2*maxMappingKeys {
		return errStructure
	}
	for _, c := range n.Content {
		if err := walkNode(c, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}

// precheckJSON walks the first JSON value's tokens: no deeper than
// maxDepth, at most maxNodes.
func precheckJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, n := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // sops says what is wrong with it
		}
		if n++; n > maxNodes {
			return errStructure
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if depth++; depth > maxDepth {
				return errStructure
			}
		case json.Delim('}'), json.Delim(']'):
			if depth--; depth == 0 {
				return nil
			}
		}
	}
}

// precheckFlat bounds a dotenv or INI file's keys: the parts of a
// flattened key (a__list_0__map_b), and, in an INI file, the keys of a
// section.
func precheckFlat(data []byte, ini bool) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	keys := 0
	for sc.Scan() {
		line := sc.Text()
		if ini && strings.HasPrefix(strings.TrimSpace(line), "[") {
			keys = 0
			continue
		}
		key, _, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if strings.Count(key, "__") > maxKeyParts {
			return errStructure
		}
		if keys++; ini && keys > maxINIKeys {
			return errStructure
		}
	}
	return nil
}
