package secrets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	gosync "sync"
	"time"

	"github.com/hostlet/hostlet/internal/helperexec"
)

// HelperName is the decrypting helper's executable name.
const HelperName = "hostlet-sops"

// Bounds of one run of the helper and of the plaintext kept.
const (
	helperTimeout = 60 * time.Second
	// maxBatch bounds the ciphertext of one request; a longer list is
	// sent in several.
	maxBatch = 32 << 20
	// maxAnswer bounds the helper's answer: the plaintext of a batch (no
	// longer than its ciphertext) as base64, and the errors.
	maxAnswer = 2*maxBatch + 1<<20
	// cacheBytes and cacheEntries bound the plaintext kept in memory, the
	// least recently used dropped first.
	cacheBytes   = 64 << 20
	cacheEntries = 8192
	// helperFailureKept is how long a failure of the helper on a file is
	// answered from the cache.
	helperFailureKept = time.Minute
)

// The kinds of a decryption error, as the helper names them.
const (
	KindNoKey     = "no-key"
	KindIntegrity = "integrity"
	KindFormat    = "format"
	// KindHelper: the helper could not be run or did not answer.
	KindHelper = "helper"
)

// File is an encrypted file to decrypt: Name says where it is from
// (source:path) in errors, Format is sops's (sopsfile.Detect's).
type File struct {
	Name   string
	Format string
	Data   []byte
}

// Error is why a file was not decrypted. It never holds a value of the
// file.
type Error struct {
	File string
	Kind string
	Msg  string
}

func (e *Error) Error() string { return "cannot decrypt " + e.File + ": " + e.Msg }

// Plain is a decrypted file: its plaintext and, for a file of values
// (YAML, JSON, dotenv, INI), each encrypted value as the file holds it
// (ENC[AES256_GCM,...]) mapped to its plaintext.
type Plain struct {
	Data   []byte
	Values map[string]string
}

// size is what p holds in bytes, for the cache's bound.
func (p Plain) size() int {
	n := len(p.Data)
	for k, v := range p.Values {
		n += len(k) + len(v)
	}
	return n
}

// Decrypter decrypts files with the host's keys through the helper, each
// distinct ciphertext once while its plaintext stays in the cache. It is
// safe for concurrent use.
type Decrypter struct {
	helper string // "" finds it as helperexec.Find does
	keys   Keys

	mu    gosync.Mutex
	cache map[[32]byte]*cached
	order [][32]byte // least recently used first
	bytes int
}

type cached struct {
	plain Plain
	err   *Error // a file's own failure, kept too
	// until: a failure of the helper on the file (a crash, an answer
	// over its bound) is kept until then, not for good (the helper may
	// be upgraded meanwhile).
	until time.Time
}

// NewDecrypter returns a decrypter with keys; helper "" finds
// hostlet-sops beside the running executable, else on PATH.
func NewDecrypter(helper string, keys Keys) *Decrypter {
	return &Decrypter{helper: helper, keys: keys, cache: map[[32]byte]*cached{}}
}

// Decrypt returns the plaintext of every file, in order, or its *Error.
// The returned plaintext is shared with the cache: never change it.
func (d *Decrypter) Decrypt(ctx context.Context, files []File) ([]Plain, []error) {
	plain := make([]Plain, len(files))
	errs := make([]error, len(files))
	var todo []int
	for i, f := range files {
		if c, ok := d.lookup(cacheKey(f)); ok && (c.until.IsZero() || time.Now().Before(c.until)) {
			plain[i], errs[i] = c.result(f.Name)
			continue
		}
		todo = append(todo, i)
	}
	for len(todo) > 0 {
		batch, size := todo[:0:0], 0
		for len(todo) > 0 && (len(batch) == 0 || size+len(files[todo[0]].Data) <= maxBatch) {
			size += len(files[todo[0]].Data)
			batch, todo = append(batch, todo[0]), todo[1:]
		}
		d.decryptBatch(ctx, files, batch, plain, errs)
	}
	return plain, errs
}

func (c *cached) result(name string) (Plain, error) {
	if c.err != nil {
		e := *c.err
		e.File = name
		return Plain{}, &e
	}
	return c.plain, nil
}

// decryptBatch runs the helper once on the files of batch (indexes into
// files) and fills plain and errs.
func (d *Decrypter) decryptBatch(ctx context.Context, files []File, batch []int, plain []Plain, errs []error) {
	req := wireRequest{Identities: d.keys.identities, SSHKeys: d.keys.sshKeys}
	for _, i := range batch {
		req.Files = append(req.Files, wireFile{Format: files[i].Format, Data: files[i].Data})
	}
	ans, err := d.run(ctx, req)
	if err != nil && len(batch) > 1 && ctx.Err() == nil {
		// One file may have failed the helper: each alone, so that it
		// fails only itself.
		for _, i := range batch {
			d.decryptBatch(ctx, files, []int{i}, plain, errs)
		}
		return
	}
	for n, i := range batch {
		if err != nil {
			e := &Error{Kind: KindHelper, Msg: err.Error()}
			if ctx.Err() == nil {
				d.store(cacheKey(files[i]), &cached{err: e, until: time.Now().Add(helperFailureKept)})
			}
			e2 := *e
			e2.File = files[i].Name
			errs[i] = &e2
			continue
		}
		r := ans.Files[n]
		c := &cached{plain: Plain{Data: r.Plaintext, Values: r.Values}}
		switch {
		case r.Kind != "":
			c = &cached{err: &Error{Kind: r.Kind, Msg: r.Error}}
		case c.plain.Data == nil:
			c.plain.Data = []byte{} // an empty file (JSON leaves it out)
		}
		d.store(cacheKey(files[i]), c)
		plain[i], errs[i] = c.result(files[i].Name)
	}
}

// run runs the helper on req: no environment, the request on its stdin,
// its answer bounded.
func (d *Decrypter) run(ctx context.Context, req wireRequest) (wireAnswer, error) {
	// Handed the host's keys: never one from PATH, nor one others may
	// replace.
	helper, err := helperexec.FindTrusted(HelperName, d.helper)
	if err != nil {
		return wireAnswer{}, fmt.Errorf("%w; make build builds it into bin/, or set secrets.helper", err)
	}
	in, err := json.Marshal(req)
	if err != nil {
		return wireAnswer{}, fmt.Errorf("encode the request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper)
	cmd.WaitDelay = time.Second
	cmd.Env = []string{}
	cmd.Stdin = bytes.NewReader(in)
	out := &helperexec.Buffer{Max: maxAnswer, Stop: true}
	stderr := &helperexec.Buffer{Max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, stderr
	err = cmd.Run()
	switch {
	case out.Over:
		return wireAnswer{}, fmt.Errorf("%s: an answer over %d MiB", HelperName, maxAnswer>>20)
	case err != nil && ctx.Err() != nil:
		return wireAnswer{}, fmt.Errorf("%s: %w", HelperName, ctx.Err())
	case err != nil:
		line, _, _ := bytes.Cut(bytes.TrimSpace(stderr.Bytes()), []byte("\n"))
		return wireAnswer{}, fmt.Errorf("%s: %w: %s", HelperName, err, line)
	}
	var ans wireAnswer
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		return wireAnswer{}, fmt.Errorf("%s: its answer does not decode: %w", HelperName, err)
	}
	if len(ans.Files) != len(req.Files) {
		return wireAnswer{}, fmt.Errorf("%s: %d results for %d files", HelperName, len(ans.Files), len(req.Files))
	}
	return ans, nil
}

// cacheKey is the key of f's plaintext: its format and its ciphertext.
func cacheKey(f File) [32]byte {
	h := sha256.New()
	h.Write([]byte(f.Format))
	h.Write([]byte{0})
	h.Write(f.Data)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func (d *Decrypter) lookup(k [32]byte) (*cached, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.cache[k]
	if ok {
		d.touch(k)
	}
	return c, ok
}

// touch moves k to the end of the order (most recently used).
func (d *Decrypter) touch(k [32]byte) {
	for i, o := range d.order {
		if o == k {
			d.order = append(append(d.order[:i:i], d.order[i+1:]...), k)
			return
		}
	}
}

func (d *Decrypter) store(k [32]byte, c *cached) {
	d.mu.Lock()
	defer d.mu.Unlock()
	size := c.plain.size()
	if size > cacheBytes {
		return
	}
	if old, ok := d.cache[k]; ok {
		// Replaced (a failure of the helper kept for a while).
		d.bytes -= old.plain.size()
		delete(d.cache, k)
		d.order = slices.DeleteFunc(d.order, func(o [32]byte) bool { return o == k })
	}
	for len(d.order) > 0 && (len(d.order) >= cacheEntries || d.bytes+size > cacheBytes) {
		old := d.order[0]
		d.order = d.order[1:]
		d.bytes -= d.cache[old].plain.size()
		delete(d.cache, old)
	}
	d.cache[k] = c
	d.order = append(d.order, k)
	d.bytes += size
}

// CheckKeys runs the helper on the keys alone: an identity it cannot
// parse (not an age identity, a plugin's, an SSH key with a passphrase)
// or a helper that does not run is an error naming it.
func (d *Decrypter) CheckKeys(ctx context.Context) error {
	if _, err := d.run(ctx, wireRequest{Identities: d.keys.identities, SSHKeys: d.keys.sshKeys}); err != nil {
		return err
	}
	return nil
}
