package textcap

import (
	"context"
	"fmt"
	"log/slog"
)

// NewLogHandler returns a handler that passes records to h with their
// message and every attribute value cut to n bytes (Truncate): strings,
// errors, fmt.Stringers and other values whose text is longer. Values
// within the bound are passed unchanged, so the output format is h's.
func NewLogHandler(h slog.Handler, n int) slog.Handler {
	return &logHandler{h: h, n: max(n, minBound)}
}

type logHandler struct {
	h slog.Handler
	n int
}

// Enabled implements slog.Handler.
func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Truncate(r.Message, l.n), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(l.attr(a))
		return true
	})
	return l.h.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	capped := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		capped[i] = l.attr(a)
	}
	return &logHandler{h: l.h.WithAttrs(capped), n: l.n}
}

// WithGroup implements slog.Handler.
func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{h: l.h.WithGroup(name), n: l.n}
}

// attr bounds one attribute's value.
func (l *logHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); len(s) > l.n {
			return slog.String(a.Key, Truncate(s, l.n))
		}
	case slog.KindGroup:
		group := v.Group()
		capped := make([]slog.Attr, len(group))
		for i, g := range group {
			capped[i] = l.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(capped...)}
	case slog.KindAny:
		if s := text(v.Any()); len(s) > l.n {
			return slog.String(a.Key, Truncate(s, l.n))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// text is how a handler shows x; "" when that panics (a nil pointer behind
// an interface), which the handler then reports itself.
func text(x any) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	switch x := x.(type) {
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprintf("%+v", x)
	}
}
