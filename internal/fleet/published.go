package fleet

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/hostlet/hostlet/manifest"
)

// PublishedFormat names the encoding of a published set.
const PublishedFormat = "hostlet-published/v1"

// Published is what `hostlet publish` writes for one host's source (a
// git source with `via: etcd`): the set the host would read from git at
// the release's revision, rendered off the host (Compose projects, files,
// build contexts), and validated. Secrets stay as the repository holds
// them (references or ciphertext): nothing is decrypted to publish.
type Published struct {
	Format string `json:"format"`
	// Release is the revision published (a git commit SHA); the host's
	// source reports it as its revision.
	Release string `json:"release"`
	// Source is the source's name in the host's config.
	Source string `json:"source"`
	// Files is how many files the source read.
	Files     int                `json:"files"`
	Manifests []manifest.Sourced `json:"manifests"`
}

// DesiredKey is the etcd key of a host's published set for a source.
func DesiredKey(prefix, host, source string) string {
	return path.Join("/", prefix, "desired", host, source)
}

// ReleaseKey is the etcd key of a release's record.
func ReleaseKey(prefix, rev string) string {
	return path.Join("/", prefix, "releases", rev)
}

// EncodePublished encodes p for etcd: gzip-compressed JSON.
func EncodePublished(p Published) ([]byte, error) {
	p.Format = PublishedFormat
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(zw).Encode(p); err != nil {
		return nil, fmt.Errorf("encode the published set of source %s: %w", p.Source, err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// DecodePublished decodes a published set, its JSON bounded to
// manifest.MaxSize once decompressed. source is the name the host gives
// the source: a set published for another source is refused.
func DecodePublished(b []byte, source string) (Published, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return Published{}, fmt.Errorf("published set: not a set hostlet publish wrote: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, manifest.MaxSize+1))
	if err != nil {
		return Published{}, fmt.Errorf("published set: %w", err)
	}
	if int64(len(data)) > manifest.MaxSize {
		return Published{}, fmt.Errorf("published set: over %d bytes: %w", manifest.MaxSize, manifest.ErrTooLarge)
	}
	// Bounded before anything is decoded: the JSON's structure, then
	// its manifests, counted without decoding them.
	if err := manifest.CheckStructure(data, manifest.MaxSourceMarks, "published set"); err != nil {
		return Published{}, fmt.Errorf("published set: %w", err)
	}
	if err := countPublished(data); err != nil {
		return Published{}, fmt.Errorf("published set: %w", err)
	}
	var p Published
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Published{}, fmt.Errorf("published set: %w", err)
	}
	switch {
	case p.Format != PublishedFormat:
		return Published{}, fmt.Errorf("published set: format %q, want %q", p.Format, PublishedFormat)
	case p.Source != source:
		return Published{}, fmt.Errorf("published set: for source %q, not %q", p.Source, source)
	case p.Release == "" || len(p.Release) > 256 || strings.ContainsAny(p.Release, "\x00\n"):
		return Published{}, errors.New("published set: no release revision")
	}
	for i := range p.Manifests {
		// What the host reads is its own source's, whatever was written.
		p.Manifests[i].Origin.Source = source
	}
	return p, nil
}

// countPublished returns an error when the "manifests" list of a
// published set holds more than manifest.MaxSourceManifests items,
// reading its JSON token by token and skipping each item undecoded. What
// is not a set is left to the decode that follows to report.
func countPublished(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		if key != "manifests" {
			if err := dec.Decode(&skipJSON{}); err != nil {
				return nil
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return nil
		}
		for n := 0; dec.More(); n++ {
			if n == manifest.MaxSourceManifests {
				return fmt.Errorf("more than %d manifests: %w", manifest.MaxSourceManifests, manifest.ErrTooManyManifests)
			}
			if err := dec.Decode(&skipJSON{}); err != nil {
				return nil
			}
		}
		return nil
	}
	return nil
}

// skipJSON decodes nothing: the decoder only reads past a value.
type skipJSON struct{}

// UnmarshalJSON implements json.Unmarshaler.
func (*skipJSON) UnmarshalJSON([]byte) error { return nil }
