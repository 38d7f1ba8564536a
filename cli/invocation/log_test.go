package invocation

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/lmittmann/tint"
)

// TestLogLinesEscapeText: a log line's message and attributes show a
// control character as an escape, with and without colour. tint puts ESC
// back for "\x1b" in a quoted value it colours, so that text must not
// reach it either.
func TestLogLinesEscapeText(t *testing.T) {
	for _, color := range []bool{false, true} {
		var b bytes.Buffer
		log := slog.New(tint.NewTextHandler(&b, &tint.Options{NoColor: !color, ReplaceAttr: logTextAttr}))
		log.Info("waiting for\x1b[2J lock", "actor", "bot \x1b]0;pwned\x07\nFORGED", "literal", `a \x1b[2J b`,
			"err", errors.New("bad\r\npath"), "pid", 42)
		out := b.String()
		for _, raw := range []string{"\x1b[2J", "\x1b]0;", "\x07", "\r", "\nFORGED"} {
			if strings.Contains(out, raw) {
				t.Errorf("color %v: the log line keeps %q raw: %q", color, raw, out)
			}
		}
		if strings.Count(out, "\n") != 1 || !strings.Contains(out, "pid=") {
			t.Errorf("color %v: want one line with every attribute: %q", color, out)
		}
	}
}
