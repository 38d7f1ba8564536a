package invocation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/itchyny/gojq"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
)

// jqFilter is --jq EXPR: it implies --json, holds back what the command
// writes on stdout and, once the command is done, writes the results of
// EXPR on each JSON document of it instead, as gh's --jq does: a string
// as bare text (its controls escaped, as the text output's), anything
// else as compact JSON, one per line.
type jqFilter struct {
	code *gojq.Code
	out  io.Writer    // the real stdout
	held bytes.Buffer // what the command wrote
}

// StartJQ parses expr and diverts stdout until g.finishJQ.
func (g *Globals) StartJQ(expr string) error {
	g.JSON = true // an expression refused is answered in JSON too
	q, err := gojq.Parse(expr)
	if err != nil {
		return events.Invalid("--jq", expr, "is not a jq expression: "+err.Error())
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return events.Invalid("--jq", expr, err.Error())
	}
	g.jq = &jqFilter{code: code, out: g.IO.Out}
	g.IO.Out = &g.jq.held
	return nil
}

// Stdout is where output that is not lockledger's own goes (run's
// command): the real stdout, never the --jq filter.
func (g *Globals) Stdout() io.Writer {
	if g.jq != nil {
		return g.jq.out
	}
	return g.IO.Out
}

// FinishJQ writes the results of --jq on what the command wrote, and
// returns code, or ExitFailure when the expression failed on a document
// of a command that succeeded.
func (g *Globals) FinishJQ(code int) int {
	if g.jq == nil {
		return code
	}
	f := g.jq
	g.IO.Out, g.jq = f.out, nil
	held := bytes.TrimSpace(bytes.Clone(f.held.Bytes()))
	dec := json.NewDecoder(&f.held)
	dec.UseNumber()
	for {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return code
		} else if err != nil {
			g.SayError(fmt.Sprintf("--jq: the output is not JSON: %v", err))
			return max(code, ExitFailure)
		}
		iter := f.code.Run(v) // gojq takes the json.Number of UseNumber as it is
		for {
			r, ok := iter.Next()
			if !ok {
				break
			}
			if err, isErr := r.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					break
				}
				g.SayError("--jq: " + err.Error())
				if code == ExitOK {
					// What the command did (a lock taken, with its request
					// id) must not be lost with the expression.
					g.SayError("the command itself succeeded; its output: " + string(held))
				}
				return max(code, ExitFailure)
			}
			if s, isString := r.(string); isString {
				// Bare, as the text output writes text: its controls
				// escaped (termtext), since a string may be another
				// user's (another tool's lock file) and a raw one would
				// drive the terminal; --json gives the exact value.
				fmt.Fprintln(f.out, termtext.Escape(s))
				continue
			}
			WriteJSON(f.out, r)
		}
	}
}
