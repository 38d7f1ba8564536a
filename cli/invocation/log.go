package invocation

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/lmittmann/tint"
	"golang.org/x/term"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/termtext"
)

// EnvLogLevel is the default of --log-level.
const EnvLogLevel = "LOCKLEDGER_LOG_LEVEL"

// Setup makes the logger; levelFromEnv says --log-level was not given, so
// a bad value is LOCKLEDGER_LOG_LEVEL's.
func (g *Globals) Setup(levelFromEnv bool) error {
	var level slog.Level
	switch strings.ToLower(g.LogLevel) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		field := "--log-level"
		if levelFromEnv {
			field = EnvLogLevel
		}
		return events.Invalid(field, g.LogLevel, "must be debug, info, warn or error")
	}
	if g.Quiet {
		level = slog.LevelError
	}
	switch g.LogFormat {
	case "text":
		g.Log = slog.New(tint.NewTextHandler(g.IO.ErrOut, &tint.Options{
			Level: level, TimeFormat: time.TimeOnly, NoColor: !ColorOK(g.IO.ErrOut), ReplaceAttr: logTextAttr,
		}))
	case "json":
		g.Log = slog.New(slog.NewJSONHandler(JSONOut(g.IO.ErrOut), &slog.HandlerOptions{Level: level}))
	default:
		return events.Invalid("--log-format", g.LogFormat, "must be text or json")
	}
	return nil
}

// ColorOK: colour only on a terminal, never with NO_COLOR set.
func ColorOK(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return IsTerminal(w)
}

// IsTerminal reports whether v is an *os.File that is a terminal.
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// logTextAttr escapes the text of a log line's message and attributes
// (termtext), so a path or an actor another user chose cannot drive the
// terminal. tint turns "\x1b" back into ESC inside a quoted value when it
// colours, so that text is written "\u001b" here.
func logTextAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.SourceKey) {
		return a
	}
	v := a.Value.Resolve()
	var s string
	switch v.Kind() {
	case slog.KindString:
		s = v.String()
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			return a
		}
	default:
		return a
	}
	a.Value = slog.StringValue(strings.ReplaceAll(termtext.Escape(s), `\x1b`, `\u001b`))
	return a
}

// StatusLine says whether progress may be drawn on stderr, a terminal's
// line rewritten in place (the only output with cursor controls).
func (g *Globals) StatusLine() bool { return !g.Quiet && IsTerminal(g.IO.ErrOut) }
