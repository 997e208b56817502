package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	hsync "github.com/hostlet/hostlet/sync"
)

// Holder holds and releases pods (the Syncer). Its errors say what went
// wrong: Release of a pod not held is hsync.ErrNotHeld; an error that
// wraps another is a hold that could not be saved (the wrapped error
// says why); any other refuses the request (a bad pod ID, too many
// holds).
type Holder interface {
	Hold(ctx context.Context, id, by, reason string) (hsync.Hold, error)
	Release(id string) error
}

// MaxHoldBody is the largest body POST /pods/{id}/hold takes: who holds
// and why, a few words each.
const MaxHoldBody = 4 << 10

// HoldRequest is the optional JSON body of POST /pods/{id}/hold. The
// holder keeps By and Reason (cut to its bounds) to show them in the
// status.
type HoldRequest struct {
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// HoldAnswer is POST /pods/{id}/hold's answer: the hold taken.
type HoldAnswer struct {
	Pod string `json:"pod"`
	hsync.Hold
	// Note says that a change of the pod under way when the hold was
	// taken is still ending (202): the hold is in effect.
	Note string `json:"note,omitempty"`
}

// HoldWait bounds how long POST /pods/{id}/hold waits for a change of
// the pod under way to end before it answers 202.
const HoldWait = 10 * time.Second

// ReleaseAnswer is DELETE /pods/{id}/hold's answer.
type ReleaseAnswer struct {
	Released string `json:"released"`
}

// HandleHolds serves POST /pods/{id}/hold (hold the pod: hostlet neither
// recreates, removes nor starts it) and DELETE /pods/{id}/hold (release
// it). Both need the bearer token, checked before the body is read;
// without a token configured they are off (404), as every endpoint that
// changes something.
func (s *Server) HandleHolds(h Holder) {
	if s.opts.Token == "" {
		return
	}
	s.Handle("POST /pods/{id}/hold", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		req, err := readHoldRequest(w, r)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over the limit of %d bytes", MaxHoldBody))
				return
			}
			refuse(w, http.StatusBadRequest, err.Error())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), HoldWait)
		defer cancel()
		hold, err := h.Hold(ctx, id, req.By, req.Reason)
		if errors.Is(err, hsync.ErrChangeUnderWay) {
			writeJSON(w, http.StatusAccepted, HoldAnswer{Pod: id, Hold: hold, Note: err.Error()})
			return
		}
		if err != nil {
			writeError(w, holdErrorCode(err), err.Error())
			return
		}
		writeJSON(w, http.StatusOK, HoldAnswer{Pod: id, Hold: hold})
	}))
	s.Handle("DELETE /pods/{id}/hold", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		err := h.Release(id)
		switch {
		case errors.Is(err, hsync.ErrNotHeld):
			writeError(w, http.StatusNotFound, "pod "+id+" is not held")
		case err != nil:
			writeError(w, http.StatusInternalServerError, err.Error())
		default:
			writeJSON(w, http.StatusOK, ReleaseAnswer{Released: id})
		}
	}))
}

// holdErrorCode is the status of a Hold error (see Holder): 500 for a
// hold that could not be saved, 400 for a refused request.
func holdErrorCode(err error) int {
	if errors.Unwrap(err) != nil {
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// readHoldRequest decodes the optional body: nothing, or one JSON object
// of known fields.
func readHoldRequest(w http.ResponseWriter, r *http.Request) (HoldRequest, error) {
	var req HoldRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxHoldBody))
	if err != nil {
		return HoldRequest{}, bodyError(err)
	}
	if !utf8.Valid(body) {
		// JSON would take each bad byte for U+FFFD, three bytes: the
		// fields could grow past the body's bound.
		return HoldRequest{}, bodyError(errors.New("not UTF-8"))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); errors.Is(err, io.EOF) {
		return HoldRequest{}, nil
	} else if err != nil {
		return HoldRequest{}, bodyError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("more than one JSON value")
		}
		return HoldRequest{}, bodyError(err)
	}
	return req, nil
}

// bodyError says what is wrong with a hold's body, keeping a
// *http.MaxBytesError findable.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		// The name is the sender's text, of up to the body's bound: named
		// back only when it is a short word.
		if name = strings.Trim(name, `"`); len(name) > 32 || strings.IndexFunc(name, notWordRune) >= 0 {
			err = errors.New("json: an unknown field")
		}
	}
	return fmt.Errorf(`body: want {"by": "...", "reason": "..."} or nothing: %w`, err)
}

func notWordRune(r rune) bool {
	return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
}
