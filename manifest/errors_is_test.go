package manifest

import (
	"bytes"
	"errors"
	"testing"
)

// An input over the size limit is ErrTooLarge to errors.Is, also through
// the *Error that names its file.
func TestTooLargeIsErrTooLarge(t *testing.T) {
	_, err := Decode(bytes.Repeat([]byte("a"), MaxSize+1), Origin{Source: "fleet", File: "big.yaml"})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decode of %d bytes: %v; errors.Is(err, ErrTooLarge) = false", MaxSize+1, err)
	}
	var me *Error
	if !errors.As(err, &me) || me.Origin.File != "big.yaml" {
		t.Errorf("Decode: %v, want a *manifest.Error naming big.yaml", err)
	}
}
