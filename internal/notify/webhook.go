package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/hostlet/hostlet/internal/notify/chatwire"
)

// SignatureHeader carries a signed webhook's signature: "sha256=" and the
// hex HMAC-SHA256 of the exact body, keyed with the secretFile's content.
const SignatureHeader = "X-Hostlet-Signature-256"

// webhook posts notifications as JSON to an http(s) URL.
type webhook struct {
	url       string
	secret    []byte // nil: unsigned
	client    *http.Client
	userAgent string
}

// Sign returns the value of SignatureHeader for body signed with secret.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func (w *webhook) send(ctx context.Context, n Notification) error {
	body, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notification: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("make request: %w", chatwire.Scrub(err, w.url))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.userAgent)
	if w.secret != nil {
		req.Header.Set(SignatureHeader, Sign(w.secret, body))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", chatwire.Scrub(err, w.url))
	}
	defer resp.Body.Close()
	// Read a little of the answer so that the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post: answered %s", resp.Status)
	}
	return nil
}

// noRedirect makes a client answer with a redirect's response instead of
// following it (to another host, it would carry the signed body there): a
// redirect is a failure like any status but 2xx.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
