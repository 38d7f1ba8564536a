package cli

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

// envLogLevel is the default of --log-level.
const envLogLevel = "LOCKLEDGER_LOG_LEVEL"

// setup makes the logger; levelFromEnv says --log-level was not given, so
// a bad value is LOCKLEDGER_LOG_LEVEL's.
func (g *globals) setup(levelFromEnv bool) error {
	var level slog.Level
	switch strings.ToLower(g.logLevel) {
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
			field = envLogLevel
		}
		return events.Invalid(field, g.logLevel, "must be debug, info, warn or error")
	}
	if g.quiet {
		level = slog.LevelError
	}
	switch g.logFormat {
	case "text":
		g.log = slog.New(tint.NewHandler(g.io.ErrOut, &tint.Options{
			Level: level, TimeFormat: time.TimeOnly, NoColor: !colorOK(g.io.ErrOut), ReplaceAttr: logTextAttr,
		}))
	case "json":
		g.log = slog.New(slog.NewJSONHandler(g.io.ErrOut, &slog.HandlerOptions{Level: level}))
	default:
		return events.Invalid("--log-format", g.logFormat, "must be text or json")
	}
	return nil
}

// colorOK: colour only on a terminal, never with NO_COLOR set.
func colorOK(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return isTerminal(w)
}

func isTerminal(v any) bool {
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

// statusLine says whether progress may be drawn on stderr, a terminal's
// line rewritten in place (the only output with cursor controls).
func (g *globals) statusLine() bool { return !g.quiet && isTerminal(g.io.ErrOut) }
