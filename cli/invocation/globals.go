package invocation

import (
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
		slog.New(slog.NewJSONHandler(g.IO.ErrOut, nil)).Error(msg, attrs...)
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
func WriteJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
