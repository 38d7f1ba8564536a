package invocation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/lockledger/lockledger/internal/termtext"
	"github.com/lockledger/lockledger/trust"
)

// IO is what a command reads and writes.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Globals are the persistent flags.
type Globals struct {
	IO        IO
	Root      string
	Database  string
	JSON      bool
	LogLevel  string
	LogFormat string
	Quiet     bool
	Group     string
	Log       *slog.Logger
	Sign      signFlags
	trust     *trust.Store // TrustStore
	JQExpr    string
	jq        *jqFilter        // --jq: stdout held back until the command is done
	Signals   <-chan os.Signal // the signals cli.Main handled while the command ran (see ForwardsSignals)
}

// SayError writes a command's final failure on stderr in the form of its
// log: one JSON object per line with --log-format json (so a log shipper
// reading stderr gets no plain line), else "lockledger: MSG".
func (g *Globals) SayError(msg string, attrs ...any) {
	if g.LogFormat == "json" {
		slog.New(slog.NewJSONHandler(JSONOut(g.IO.ErrOut), nil)).Error(msg, attrs...)
		return
	}
	fmt.Fprintf(g.IO.ErrOut, "lockledger: %s\n", termtext.Escape(msg))
}

// Answer writes a command's result: v as JSON with --json, else text on
// standard output; a result that is not ok then fails the command
// (ExitFailure), which has said why.
func (g *Globals) Answer(v any, ok bool, text func(w io.Writer)) error {
	if g.JSON {
		WriteJSON(g.IO.Out, v)
	} else {
		text(g.IO.Out)
	}
	if !ok {
		return &ExitError{Code: ExitFailure}
	}
	return nil
}

// WriteJSON writes v as one line of JSON, with <, > and & as they are.
func WriteJSON(w io.Writer, v any) { writeJSON(w, v, "") }

// WriteJSONIndent writes v as JSON indented by indent, for a reader.
func WriteJSONIndent(w io.Writer, v any, indent string) { writeJSON(w, v, indent) }

// writeJSON is the one encoder of what the CLI prints as JSON, written
// through jsonOut.
func writeJSON(w io.Writer, v any, indent string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return
	}
	_, _ = JSONOut(w).Write(buf.Bytes())
}

// JSONOut is w for JSON that the CLI prints (its results, the events of
// export, timeline, history and follow, its log with --log-format json):
// the one rule of every JSON it writes. It writes the C1 controls (U+0080
// to U+009F) as \u00XX, as the encoders write C0's: they pass C1's through
// raw, and a terminal reading such output (a raw U+009B is CSI) would obey
// the text another user controls (another tool's lock file, recorded in
// an event when it was taken over). A JSON reader reads the same value,
// and an event's body hashes as stored (a checker makes it canonical
// again). What is written through it is valid UTF-8, in any pieces.
func JSONOut(w io.Writer) io.Writer { return &c1Escaped{w: w} }

type c1Escaped struct {
	w    io.Writer
	lead bool // the last piece ended with 0xC2, held back for the byte after it
}

func (e *c1Escaped) Write(b []byte) (int, error) {
	n := len(b)
	if e.lead {
		b = append([]byte{0xc2}, b...)
		e.lead = false
	}
	if len(b) > 0 && b[len(b)-1] == 0xc2 {
		e.lead, b = true, b[:len(b)-1]
	}
	if _, err := e.w.Write(escapeC1(b)); err != nil {
		return 0, err
	}
	return n, nil
}

// escapeC1 rewrites each C1 control of b, valid UTF-8 from encoding/json,
// as \u00XX. Outside its strings JSON is ASCII, and 0xC2 only ever leads a
// two-byte sequence, so each C2 80..C2 9F found is such a character inside
// a string, where the escape stands for the same value.
func escapeC1(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i+1 < len(b); i++ {
		if b[i] == 0xc2 && b[i+1] >= 0x80 && b[i+1] <= 0x9f {
			out = append(out, b[last:i]...)
			out = fmt.Appendf(out, `\u%04x`, b[i+1]) // C2 xx is U+00xx
			i++
			last = i + 1
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}
