package chatwire

// HelperName is the helper's executable name.
const HelperName = "hostlet-notify"

// MaxRequest bounds a request's JSON, in bytes.
const MaxRequest = 1 << 20

// The operations of a request.
const (
	// OpCheck checks that URL names a chat service the helper knows, in a
	// shape it accepts; nothing is sent.
	OpCheck = "check"
	// OpSend sends Text to the chat service of URL, once.
	OpSend = "send"
)

// The helper's exit statuses.
const (
	ExitOK = 0
	// ExitRefused: the URL was refused (check) or the send failed; stderr
	// holds one line that says why, without the URL's secrets.
	ExitRefused = 1
	// ExitBadRequest: the input was not a request (not JSON, over
	// MaxRequest, an unknown op).
	ExitBadRequest = 2
)

// Request is what hostlet writes to the helper's stdin.
type Request struct {
	// Op is OpCheck or OpSend; required.
	Op string `json:"op"`
	// URL is the target's chat URL (slack://..., generic://...);
	// required. It may carry tokens.
	URL string `json:"url"`
	// Text is the message sent; OpSend only.
	Text string `json:"text,omitempty"`
}
