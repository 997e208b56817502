package manifest

import (
	"fmt"
	"strings"
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
}

func (e *Error) Error() string {
	var b strings.Builder
	if o := e.Origin.String(); o != "" {
		b.WriteString(o)
		b.WriteString(": ")
	}
	if e.Pod != "" {
		fmt.Fprintf(&b, "pod %q: ", e.Pod)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Detail)
	return b.String()
}

// Errorf builds an Error for a pod field.
func Errorf(origin Origin, pod, field, format string, args ...any) *Error {
	return &Error{Origin: origin, Pod: pod, Field: field, Detail: fmt.Sprintf(format, args...)}
}
