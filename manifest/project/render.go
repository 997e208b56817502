package project

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	gosync "sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/internal/helperexec"
	"github.com/hostlet/hostlet/manifest"
)

// HelperName is the helper's executable name.
const HelperName = "hostlet-compose"

// Bounds of one render.
const (
	renderTimeout = 60 * time.Second
	maxResponse   = 64 << 20
	// cacheSize and cacheBytes bound the renders kept (one per project
	// and settings) in number and in the bytes of their answers (files
	// mounted from a project are in them), the least recently used
	// dropped first: two projects at the bound of their files fit.
	cacheSize  = 1024
	cacheBytes = 2 * maxResponse
)

// ErrNoHelper is the error of a render without the helper.
var ErrNoHelper = errors.New(HelperName + " not found")

// errNotRun marks a failure to start the helper: the host's, not the
// bundle's, so it is not remembered.
var errNotRun = errors.New("not started")

// Renderer renders projects with the helper, once per distinct bundle: a
// project whose files and settings did not change since its last render
// is not rendered again. It is safe for concurrent use.
type Renderer struct {
	// Helper is the helper's path; "" finds it beside the running
	// executable, else on PATH.
	Helper string
	// Host are the host's settings, applied to every project.
	Host Host
	// Timeout bounds one run of the helper; 0 means 60 s.
	Timeout time.Duration

	mu    gosync.Mutex
	cache map[[32]byte]cachedResponse
	order [][32]byte
	bytes int
}

type cachedResponse struct {
	resp frozenResponse
	size int
}

// NewRenderer returns a renderer with the host's settings; helper "" finds
// the helper beside the running executable, else on PATH.
func NewRenderer(helper string, host Host) *Renderer {
	return &Renderer{Helper: helper, Host: host}
}

// Render renders b (its Host set from the renderer's) into pods. The error,
// if any, is a *multierror.Error of *manifest.Error: the project's
// problems as a whole; each pod carries its service's problems.
func (r *Renderer) Render(ctx context.Context, b Bundle) ([]manifest.Sourced, error) {
	b.Options.Host = r.Host
	key, err := bundleKey(b)
	if err != nil {
		return nil, r.fail(b, fmt.Errorf("encode the project: %w", err))
	}
	if kept, ok := r.cached(key); ok {
		return kept.result()
	}
	req, err := json.Marshal(b)
	if err != nil {
		return nil, r.fail(b, fmt.Errorf("encode the project: %w", err))
	}
	resp, size, err := r.run(ctx, req)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, errNotRun) {
			// The caller gave up, or the helper is not there (yet): the
			// bundle may render another time.
			return nil, r.fail(b, err)
		}
		// The helper's own failure (its timeout, its crash) is the
		// bundle's: remembered, not run again on every read.
		resp = Response{Errors: []*manifest.Error{failure(b, err)}}
		size = len(err.Error())
	}
	kept := freeze(resp)
	r.store(key, kept, size)
	return kept.result()
}

// bundleKey is the digest of everything of b the helper sees, the key of
// its render in the cache: its options as JSON, its body, each file by
// name (sorted) with its error, exec bit and data, every part prefixed
// by its length. Unlike the request, it costs no copy of the files.
func bundleKey(b Bundle) ([32]byte, error) {
	opts, err := json.Marshal(b.Options)
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	part := func(p []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	part(opts)
	part(b.Body)
	if len(b.Kube) > 0 {
		kube, err := json.Marshal(b.Kube)
		if err != nil {
			return [32]byte{}, err
		}
		part(kube)
	}
	for _, name := range b.Names() {
		f := b.Files[name]
		exec := []byte{0}
		if f.Exec {
			exec[0] = 1
		}
		part([]byte(name))
		part([]byte(f.Err))
		part(exec)
		part(f.Data)
	}
	return [32]byte(h.Sum(nil)), nil
}

// frozenResponse is a helper's answer as the cache keeps it: the answer
// without its files (build contexts, files volumes), and the files apart,
// each the one value of its digest, in the order eachFiles visits them.
// A Files value is never changed once made, so every copy handed out
// shares them; the rest is copied each time, cheap without the files'
// bytes (a build context of 10 MiB cost a poll of its source a third of
// a second copying it through JSON).
type frozenResponse struct {
	answer Response
	files  []*manifest.Files
}

// freeze makes resp, an answer no one else holds (just decoded), the
// cache's: its files taken out, equal ones made one.
func freeze(resp Response) frozenResponse {
	fr := frozenResponse{answer: resp}
	shareFiles(fr.answer.Manifests)
	eachFiles(fr.answer.Manifests, func(f **manifest.Files) {
		fr.files = append(fr.files, *f)
		*f = nil
	})
	return fr
}

// result is the response as Load returns it: fresh copies, so a caller
// cannot change the cache, sharing the files.
func (fr frozenResponse) result() ([]manifest.Sourced, error) {
	var copied Response
	if err := copyJSON(fr.answer, &copied); err != nil {
		return nil, fmt.Errorf("copy a kept render: %w", err)
	}
	i := 0
	eachFiles(copied.Manifests, func(f **manifest.Files) {
		*f = fr.files[i]
		i++
	})
	if len(copied.Errors) == 0 {
		return copied.Manifests, nil
	}
	errs := &multierror.Error{}
	for _, e := range copied.Errors {
		errs.Errors = append(errs.Errors, e)
	}
	return copied.Manifests, errs
}

func copyJSON(from any, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}

// eachFiles calls visit with every place of ms that holds files (a
// container's build context, a files volume), nil or not, always in the
// same order for manifests of one shape.
func eachFiles(ms []manifest.Sourced, visit func(**manifest.Files)) {
	for i := range ms {
		m := &ms[i].Manifest
		for j := range m.Containers {
			if b := m.Containers[j].Build; b != nil {
				visit(&b.Files)
			}
		}
		for j := range m.Volumes {
			visit(&m.Volumes[j].Files)
		}
	}
}

// shareFiles makes the pods' equal files (build contexts, files volumes:
// a service's replicas, services built from one folder) one value each,
// by digest: the helper's answer carries a copy per pod, and a Files value
// is never changed once made.
func shareFiles(ms []manifest.Sourced) {
	seen := map[string]*manifest.Files{}
	share := func(f *manifest.Files) *manifest.Files {
		if f == nil {
			return nil
		}
		d := f.Digest()
		if g, ok := seen[d]; ok && g.Source == f.Source && g.Secret == f.Secret {
			return g
		}
		seen[d] = f
		return f
	}
	eachFiles(ms, func(f **manifest.Files) { *f = share(*f) })
}

// fail is a render failure as the project's one error.
func (r *Renderer) fail(b Bundle, err error) error {
	return &multierror.Error{Errors: []error{failure(b, err)}}
}

func failure(b Bundle, err error) *manifest.Error {
	file := b.Options.Dir
	if file == "." {
		file = ""
	}
	what := "render the Compose project: "
	if len(b.Kube) > 0 {
		what, file = "translate the Kubernetes objects: ", ""
	}
	return &manifest.Error{
		Origin: manifest.Origin{Source: b.Options.Source, File: file},
		Detail: what + err.Error(),
		Err:    err,
	}
}

// cached returns a render kept, making it the most recently used.
func (r *Renderer) cached(key [32]byte) (frozenResponse, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[key]
	if ok {
		i := slices.Index(r.order, key)
		r.order = append(append(r.order[:i:i], r.order[i+1:]...), key)
	}
	return c.resp, ok
}

// store keeps a render of size bytes (its answer's), dropping the least
// recently used ones until the cache is within its bounds.
func (r *Renderer) store(key [32]byte, resp frozenResponse, size int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil {
		r.cache = map[[32]byte]cachedResponse{}
	}
	if _, ok := r.cache[key]; ok || size > cacheBytes {
		return
	}
	for len(r.order) > 0 && (len(r.order) >= cacheSize || r.bytes+size > cacheBytes) {
		r.bytes -= r.cache[r.order[0]].size
		delete(r.cache, r.order[0])
		r.order = r.order[1:]
	}
	r.cache[key] = cachedResponse{resp: resp, size: size}
	r.bytes += size
	r.order = append(r.order, key)
}

// cacheStats are the renders kept and their bytes (for tests).
func (r *Renderer) cacheStats() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cache), r.bytes
}

// run runs the helper on one request.
func (r *Renderer) run(ctx context.Context, req []byte) (Response, int, error) {
	helper, err := r.helper()
	if err != nil {
		return Response{}, 0, fmt.Errorf("%w (%w)", err, errNotRun)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = renderTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper)
	// Killed, the helper may leave a child holding its output open: Wait
	// gives up on the pipes soon after.
	cmd.WaitDelay = time.Second
	cmd.Stdin = bytes.NewReader(req)
	// The helper reads nothing but its input: no environment of ours.
	cmd.Env = []string{}
	out := &helperexec.Buffer{Max: maxResponse, Stop: true}
	stderr := &helperexec.Buffer{Max: 4096}
	cmd.Stdout, cmd.Stderr = out, stderr
	if err := cmd.Start(); err != nil {
		return Response{}, 0, fmt.Errorf("%s: %w (%w)", HelperName, err, errNotRun)
	}
	err = cmd.Wait()
	if out.Over {
		return Response{}, 0, fmt.Errorf("%s: an answer over %d bytes", HelperName, maxResponse)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Response{}, 0, fmt.Errorf("%s: %w", HelperName, ctx.Err())
		}
		if msg := bytes.TrimSpace(stderr.Bytes()); len(msg) > 0 {
			return Response{}, 0, fmt.Errorf("%s: %w: %s", HelperName, err, msg)
		}
		return Response{}, 0, fmt.Errorf("%s: %w", HelperName, err)
	}
	var resp Response
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		return Response{}, 0, fmt.Errorf("%s: its answer does not decode: %w", HelperName, err)
	}
	return resp, out.Len(), nil
}

// helper finds the helper's executable.
func (r *Renderer) helper() (string, error) {
	p, err := helperexec.Find(HelperName, r.Helper)
	var nf *helperexec.NotFoundError
	if errors.As(err, &nf) {
		return "", fmt.Errorf("%w (looked %v; make build builds it into bin/, or set compose.helper)", ErrNoHelper, nf.Tried)
	}
	return p, err
}
