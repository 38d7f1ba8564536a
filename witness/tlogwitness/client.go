package tlogwitness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/lockledger/lockledger/internal/termtext"
)

// DefaultTimeout bounds one Cosign, both its requests included.
const DefaultTimeout = 10 * time.Second

// maxResponse is the most of a witness's answer that is read.
const maxResponse = 64 << 10

// Witness is one witness: where to reach it and the key it cosigns with.
type Witness struct {
	URL      string // the prefix add-checkpoint is appended to
	Verifier *Verifier
	timeout  time.Duration
	client   *http.Client
}

// Option tunes a Witness.
type Option func(*Witness)

// WithTimeout bounds each Cosign (zero or less: DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(w *Witness) {
		if d > 0 {
			w.timeout = d
		}
	}
}

// New returns the witness at rawURL (http or https) that cosigns with v.
func New(rawURL string, v *Verifier, opts ...Option) (*Witness, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("not an http or https URL without query or fragment")
	}
	if v == nil {
		return nil, errors.New("no verifier key")
	}
	w := &Witness{URL: strings.TrimSuffix(rawURL, "/"), Verifier: v, timeout: DefaultTimeout, client: &http.Client{}}
	for _, o := range opts {
		o(w)
	}
	return w, nil
}

// ConflictError: the witness's latest tree of the log is not the old size
// a request named (HTTP 409); Size is the one it holds.
type ConflictError struct{ Size int64 }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the witness holds a tree of %d records, not the old size given", e.Size)
}

// ResponseError: the witness answered add-checkpoint with an error.
type ResponseError struct {
	URL    string
	Status int
	Body   string // what it said, clipped
}

func (e *ResponseError) Error() string {
	what := map[int]string{
		http.StatusBadRequest:          "the request is malformed",
		http.StatusForbidden:           "it does not know this log or its key (register the log's origin and verifier key with the witness)",
		http.StatusNotFound:            "no add-checkpoint endpoint there",
		http.StatusUnprocessableEntity: "the consistency proof does not lead from the tree it cosigned to this one",
	}[e.Status]
	if what == "" {
		what = http.StatusText(e.Status)
	}
	return fmt.Sprintf("witness %s answered %d (%s): %q", e.URL, e.Status, what, e.Body)
}

// AddCheckpoint sends the signed checkpoint note with a consistency proof
// from the tree of old records (C2SP tlog-witness) and returns the
// cosignature lines the witness answers; a 409 is a *ConflictError,
// another error status a *ResponseError.
func (w *Witness) AddCheckpoint(ctx context.Context, old int64, proof tlog.TreeProof, signed []byte) ([]byte, error) {
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", old)
	for _, h := range proof {
		body.WriteString(h.String() + "\n")
	}
	body.WriteByte('\n')
	body.Write(signed)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+"/add-checkpoint", &body)
	if err != nil {
		return nil, err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of witness %s: %w", w.URL, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return b, nil
	case http.StatusConflict:
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && n >= 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/x.tlog.size") {
			return nil, &ConflictError{Size: n}
		}
	}
	return nil, &ResponseError{URL: w.URL, Status: resp.StatusCode, Body: termtext.Clip(strings.TrimSpace(string(b)), 200)}
}
