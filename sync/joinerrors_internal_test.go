package sync

import (
	"errors"
	"fmt"
	"testing"
)

// joinErrors keeps the text errors.Join gave lastSync.error (one error a
// line, nested aggregates flattened) and errors.Is through it.
func TestJoinErrors(t *testing.T) {
	errPull := errors.New("pull failed")
	tests := []struct {
		name string
		errs []error
		want string
	}{
		{"none", nil, ""},
		{"only nils", []error{nil, nil}, ""},
		{"one", []error{fmt.Errorf("pod web: %w", errPull)}, "pod web: pull failed"},
		{"nested", []error{joinErrors([]error{errors.New("pod a: x"), errors.New("pod b: y")}), nil, errors.New("wait for image pulls: z")},
			"pod a: x\npod b: y\nwait for image pulls: z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := joinErrors(tc.errs)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("joinErrors: %q, want %q", got, tc.want)
			}
			if tc.want != "" && errors.Join(tc.errs...).Error() != got {
				t.Errorf("joinErrors %q differs from errors.Join %q", got, errors.Join(tc.errs...))
			}
		})
	}
	if err := joinErrors([]error{errors.New("other"), fmt.Errorf("pod web: %w", errPull)}); !errors.Is(err, errPull) {
		t.Errorf("errors.Is through joinErrors: false")
	}
}
