package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/manifest"
)

// RequestTimeout bounds one request to the API.
const RequestTimeout = 15 * time.Second

// maxAnswer bounds what is read of an answer other than the status
// document.
const maxAnswer = 64 << 10

// Client asks the API at one address.
type Client struct {
	addr  string
	token string
	http  *http.Client
}

// New returns a client of the API at addr (host:port, dialed as given;
// DialAddr turns a listen address into one) sending token as the bearer
// token ("" sends none: GET /status needs none unless the API has one).
// A redirect is never followed: hostlet's API sends none, and following
// one would send the token (and a hold's body, as a GET) elsewhere; it
// is answered as a refusal.
func New(addr, token string) *Client {
	return &Client{addr: addr, token: token, http: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// DialAddr is where a client reaches a listen address: an unspecified
// host (":10260", "0.0.0.0:10260", "[::]:10260") on loopback.
func DialAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if ip != nil && ip.To4() == nil {
			return net.JoinHostPort("::1", port)
		}
		return net.JoinHostPort("127.0.0.1", port)
	}
	return listen
}

// RefusedError is an answer the API gave with a status other than the
// one asked for: its own message when it said one.
type RefusedError struct {
	Method, URL string
	// Status is the HTTP status ("404 Not Found").
	Status string
	// Message is the API's "error" ("" when it gave none).
	Message string
}

func (e *RefusedError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("%s %s: %s", e.Method, e.URL, e.Status)
}

// Status returns the status document of host, read from the API; it is
// an error when the API answers for another host.
func (c *Client) Status(ctx context.Context, host string) (api.Document, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	u := "http://" + c.addr + "/status"
	req, err := c.request(ctx, http.MethodGet, u, nil)
	if err != nil {
		return api.Document{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return api.Document{}, fmt.Errorf("host %s unreachable: %w", host, err)
	}
	defer resp.Body.Close()
	doc, err := decodeStatus(u, resp.StatusCode, resp.Status, resp.Body)
	if err != nil {
		return api.Document{}, err
	}
	if doc.Hostname != host {
		return api.Document{}, fmt.Errorf("the local API at %s is host %q, not %q; configure etcd.endpoints to ask other hosts", c.addr, doc.Hostname, host)
	}
	return doc, nil
}

// Hold holds pod (POST /pods/{pod}/hold).
func (c *Client) Hold(ctx context.Context, pod string, req api.HoldRequest) (api.HoldAnswer, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return api.HoldAnswer{}, err
	}
	var ans api.HoldAnswer
	err = c.do(ctx, http.MethodPost, "/pods/"+url.PathEscape(pod)+"/hold", body, &ans)
	return ans, err
}

// Release releases pod (DELETE /pods/{pod}/hold).
func (c *Client) Release(ctx context.Context, pod string) (api.ReleaseAnswer, error) {
	var ans api.ReleaseAnswer
	err := c.do(ctx, http.MethodDelete, "/pods/"+url.PathEscape(pod)+"/hold", nil, &ans)
	return ans, err
}

// Sync asks for a sync now (POST /sync); force applies every change of
// the next minute, maintenance windows or not (?force=1).
func (c *Client) Sync(ctx context.Context, force bool) (api.SyncAnswer, error) {
	path := "/sync"
	if force {
		path += "?force=1"
	}
	var ans api.SyncAnswer
	err := c.do(ctx, http.MethodPost, path, nil, &ans)
	return ans, err
}

// do sends one request and decodes a 2xx answer into out; any other
// answer is a RefusedError with the API's message.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	u := "http://" + c.addr + path
	req, err := c.request(ctx, method, u, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("the local API is unreachable: %w", err)
	}
	defer resp.Body.Close()
	return decodeAnswer(method, u, resp.StatusCode, resp.Status, resp.Body, out)
}

// decodeStatus reads a status document from an answer to GET u (status
// code and text, body): a RefusedError unless 200, at most
// manifest.MaxSize bytes of body read.
func decodeStatus(u string, code int, status string, body io.Reader) (api.Document, error) {
	if code != http.StatusOK {
		return api.Document{}, &RefusedError{Method: http.MethodGet, URL: u, Status: status}
	}
	var doc api.Document
	if err := json.NewDecoder(io.LimitReader(body, manifest.MaxSize)).Decode(&doc); err != nil {
		return api.Document{}, fmt.Errorf("GET %s: %w", u, err)
	}
	return doc, nil
}

// decodeAnswer decodes a 2xx answer to method u into out; any other is a
// RefusedError with the API's message. At most maxAnswer bytes of body
// are read.
func decodeAnswer(method, u string, code int, status string, body io.Reader, out any) error {
	b, err := io.ReadAll(io.LimitReader(body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	if code/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil {
			e.Error = ""
		}
		return &RefusedError{Method: method, URL: u, Status: status, Message: e.Error}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	return nil
}

// request is a request with the bearer token (when the client has one)
// and, when there is a body, its JSON content type.
func (c *Client) request(ctx context.Context, method, u string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}
