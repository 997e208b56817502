package manifest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hostlet/hostlet/internal/textcap"
)

// Error is one problem with one manifest: where it came from, which pod,
// which field, and what is wrong. Every decode and validation error hostlet
// reports has this shape, e.g.
//
//	fleet:hosts/web-1/web.yaml: pod "web": containers[1].ports[0].hostPort: 70000 is not in 1..65535
type Error struct {
	Origin Origin `json:"origin"`
	// Pod is the manifest's id, "" when it could not be read.
	Pod string `json:"pod,omitempty"`
	// Field is the field path, e.g. containers[1].ports[0].hostPort; "" for
	// errors about the whole file or manifest.
	Field string `json:"field,omitempty"`
	// Detail says what is wrong.
	Detail string `json:"detail"`
	// Err is the error class behind Detail, when there is one (e.g.
	// ErrTooLarge), so that errors.Is sees through an Error; never shown.
	Err error `json:"-"`
}

// Unwrap returns the error class behind the detail, or nil.
func (e *Error) Unwrap() error { return e.Err }

// Error renders the error on one line, each part cut to its bound: the
// origin to textcap.OriginBytes, the pod id to textcap.IDBytes (quoted), the field path to textcap.FieldBytes and the detail to
// textcap.DetailBytes. Whatever a manifest holds, one error's text stays
// under 1.5 KiB.
func (e *Error) Error() string {
	var b strings.Builder
	if o := e.Origin.String(); o != "" {
		b.WriteString(textcap.Truncate(o, textcap.OriginBytes))
		b.WriteString(": ")
	}
	if e.Pod != "" {
		b.WriteString("pod ")
		b.WriteString(textcap.Quote(e.Pod, textcap.IDBytes))
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(textcap.Truncate(e.Field, textcap.FieldBytes))
		b.WriteString(": ")
	}
	b.WriteString(textcap.Truncate(e.Detail, textcap.DetailBytes))
	return b.String()
}

// MarshalJSON writes the error with the same bounds as Error: the source
// and file name, the pod id, the field path and the detail.
func (e *Error) MarshalJSON() ([]byte, error) {
	type plain Error
	c := plain(*e)
	c.Origin.Source = textcap.Truncate(c.Origin.Source, textcap.FieldBytes)
	c.Origin.File = textcap.Truncate(c.Origin.File, textcap.OriginBytes)
	c.Pod = textcap.Truncate(c.Pod, textcap.IDBytes)
	c.Field = textcap.Truncate(c.Field, textcap.FieldBytes)
	c.Detail = textcap.Truncate(c.Detail, textcap.DetailBytes)
	return json.Marshal(c)
}

// Errorf builds an Error for a pod field.
func Errorf(origin Origin, pod, field, format string, args ...any) *Error {
	return &Error{Origin: origin, Pod: pod, Field: field, Detail: fmt.Sprintf(format, args...)}
}
