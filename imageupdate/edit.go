package imageupdate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// edit replaces the bytes [start, end) of a file.
type edit struct {
	start, end int
	text       string
}

// Edits are the new contents of every file the due updates change,
// by path in the source.
func Edits(dir string, us []Update) (map[string][]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	byFile := map[string][]edit{}
	// wants are, for a YAML file, the image scalars edited and their new
	// values, to verify the edit by.
	wants := map[string]map[position]string{}
	contents := map[string][]byte{}
	read := func(file string) ([]byte, error) {
		if data, ok := contents[file]; ok {
			return data, nil
		}
		if fi, err := root.Lstat(file); err != nil {
			return nil, err
		} else if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file (a link?): the updater edits no file through a link", file)
		}
		data, err := readFile(root, file)
		if err != nil {
			return nil, err
		}
		contents[file] = data
		return data, nil
	}
	for _, u := range us {
		if !u.Due() {
			continue
		}
		file, e, err := editFor(u, read)
		if err != nil {
			return nil, fmt.Errorf("%s: %s/%s: %w", u.Target.File, u.Target.Pod, u.Target.Container, err)
		}
		if i := slices.IndexFunc(byFile[file], func(o edit) bool { return o.start < e.end && e.start < o.end }); i < 0 {
			byFile[file] = append(byFile[file], e)
			if file == u.Target.File {
				if wants[file] == nil {
					wants[file] = map[position]string{}
				}
				wants[file][position{u.Target.Line, u.Target.Column}] = e.text
			}
		} else if byFile[file][i] != e {
			return nil, fmt.Errorf("%s: two updates would write %q and %q at one place", file, byFile[file][i].text, e.text)
		}
	}
	out := map[string][]byte{}
	for file, es := range byFile {
		out[file] = apply(contents[file], es)
		if w := wants[file]; w != nil {
			if err := verifyYAML(contents[file], out[file], w); err != nil {
				return nil, fmt.Errorf("%s: not edited: %w", file, err)
			}
		}
	}
	return out, nil
}

// editFor is the edit that moves u: in the image's scalar, or at its
// variable's .env line.
func editFor(u Update, read func(string) ([]byte, error)) (string, edit, error) {
	t := u.Target
	if t.VarAt != nil && !t.VarAt.Default {
		data, err := read(t.VarAt.File)
		if err != nil {
			return "", edit{}, err
		}
		e, err := envEdit(data, t.Var, pinned(u.To, u.Digest))
		return t.VarAt.File, e, err
	}
	data, err := read(t.File)
	if err != nil {
		return "", edit{}, err
	}
	start, end, err := scalarSpan(data, t.Line, t.Column, t.Image)
	if err != nil {
		return "", edit{}, err
	}
	return t.File, edit{start: start, end: end, text: rewriteImage(t, u.To, u.Digest)}, nil
}

// rewriteImage is the image text with its tag (or its variable's
// default) moved to tag, and pinned to digest when one is given; an old
// digest goes.
func rewriteImage(t Target, tag, digest string) string {
	if t.VarAt != nil && t.VarAt.Default {
		m := tagVariable.FindStringSubmatch(t.Image)
		return m[1] + ":${" + m[2] + m[3] + pinned(tag, digest) + "}"
	}
	name := t.Image
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	return name + ":" + pinned(tag, digest)
}

// pinned is tag, or tag@digest when the policy pins digests (a variable
// holds both then: name:${TAG} reads name:1.5.0@sha256:...).
func pinned(tag, digest string) string {
	if digest == "" {
		return tag
	}
	return tag + "@" + digest
}

// scalarSpan finds, at line and column (1-based, in characters), the
// bytes of a YAML scalar whose value is value: plain, or in quotes
// (then the bytes inside them). A scalar written any other way (escapes,
// folded over lines) is not edited.
func scalarSpan(data []byte, line, column int, value string) (int, int, error) {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return 0, 0, fmt.Errorf("line %d is past the file's end", line)
		}
		off += i + 1
	}
	for c := 1; c < column && off < len(data); c++ {
		_, n := utf8.DecodeRune(data[off:])
		off += n
	}
	rest := data[off:]
	switch {
	case bytes.HasPrefix(rest, []byte(value)):
		return off, off + len(value), nil
	case len(rest) > 0 && (rest[0] == '"' || rest[0] == '\'') && bytes.HasPrefix(rest[1:], []byte(value+string(rest[0]))):
		return off + 1, off + 1 + len(value), nil
	}
	return 0, 0, fmt.Errorf("the image at line %d is written in a form the updater does not edit (escapes, or over several lines)", line)
}

// envEdit is the edit of variable name's value in a .env file.
func envEdit(data []byte, name, value string) (edit, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), len(data)+1)
	off := 0
	var found *edit
	for sc.Scan() {
		line := sc.Text()
		if a, ok := parseAssignment(line); ok && a.key == name {
			// The last assignment wins, as when the file is read.
			found = &edit{start: off + a.start, end: off + a.end, text: value}
		}
		off += len(line) + 1
	}
	if found == nil {
		return edit{}, fmt.Errorf("%s is set in no line of the .env the updater can edit", name)
	}
	return *found, nil
}

// apply makes the edits (none overlapping) to data.
func apply(data []byte, es []edit) []byte {
	slices.SortFunc(es, func(a, b edit) int { return b.start - a.start })
	out := slices.Clone(data)
	for _, e := range es {
		out = slices.Concat(out[:e.start], []byte(e.text), out[e.end:])
	}
	return out
}

// Write saves the edited files in the source rooted at dir, each
// replaced whole (a temporary file beside it, synced, then renamed), never
// through a link out of the source.
func Write(dir string, files map[string][]byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, file := range slices.Sorted(maps.Keys(files)) {
		if err := replaceFile(root, file, files[file]); err != nil {
			return fmt.Errorf("write %s: %w", file, err)
		}
	}
	return nil
}

func replaceFile(root *os.Root, file string, data []byte) error {
	fi, err := root.Lstat(file)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (a link?): edit the file it points to")
	}
	tmp := path.Join(path.Dir(file), ".hostlet-images-"+path.Base(file))
	_ = root.Remove(tmp) // one a killed run left
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	if err := root.Rename(tmp, file); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return nil
}

// Read reads files (paths in the source at dir): what Write replaces, to
// put back.
func Read(dir string, files []string) (map[string][]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	out := map[string][]byte{}
	for _, f := range files {
		data, err := readFile(root, f)
		if err != nil {
			return nil, err
		}
		out[f] = data
	}
	return out, nil
}

// Diff is the lines the edits changed, source by source and file by file
// ("--- source:file", then "-old" and "+new"): an edit changes bytes
// within lines, never how many there are.
func Diff(source string, originals, edited map[string][]byte) string {
	var b strings.Builder
	for _, file := range slices.Sorted(maps.Keys(edited)) {
		old := strings.Split(string(originals[file]), "\n")
		now := strings.Split(string(edited[file]), "\n")
		fmt.Fprintf(&b, "--- %s:%s\n", source, file)
		for i := range min(len(old), len(now)) {
			if old[i] != now[i] {
				fmt.Fprintf(&b, "@@ line %d\n-%s\n+%s\n", i+1, old[i], now[i])
			}
		}
	}
	return b.String()
}
