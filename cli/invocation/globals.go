package invocation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"unicode/utf8"

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
// the one rule of every JSON it writes. It writes what the encoders pass
// through raw but a terminal obeys or shows out of order (DEL, the C1
// controls, line and paragraph separators, bidirectional controls) as \u
// escapes (termtext.AppendJSON), as the encoders write C0's: a terminal
// reading such output (a raw U+009B is CSI; a U+202E shows what follows
// reversed) would obey the text another user controls (an actor, another
// tool's lock file recorded in an event when it was taken over). A JSON
// reader reads the same value, and an event's body hashes as stored (a
// checker makes it canonical again). What is written through it is valid
// UTF-8, in any pieces.
func JSONOut(w io.Writer) io.Writer { return &jsonEscaped{w: w} }

type jsonEscaped struct {
	w    io.Writer
	held []byte // the start of a character the last piece cut, for the bytes after it
}

func (e *jsonEscaped) Write(b []byte) (int, error) {
	n := len(b)
	if len(e.held) > 0 {
		b = append(e.held, b...)
		e.held = nil
	}
	if cut := cutCharacter(b); cut < len(b) {
		e.held, b = append([]byte(nil), b[cut:]...), b[:cut]
	}
	if _, err := e.w.Write(termtext.AppendJSON(nil, b)); err != nil {
		return 0, err
	}
	return n, nil
}

// cutCharacter is where a character that b ends before its last byte
// starts (len(b): none).
func cutCharacter(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}
