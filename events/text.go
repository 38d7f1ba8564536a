package events

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValidText checks a free-text field of an event (an actor, a host id):
// present unless emptyOK, at most max bytes, valid UTF-8 and free of
// control characters, which would forge lines or drive a reader's
// terminal wherever the field is shown.
func ValidText(field, s string, max int, emptyOK bool) error {
	if s == "" && !emptyOK {
		return Invalid(field, s, "must not be empty")
	}
	if len(s) > max {
		return Invalid(field, s[:32]+"...", fmt.Sprintf("must be at most %d bytes", max))
	}
	if !utf8.ValidString(s) {
		return Invalid(field, strings.ToValidUTF8(s, "\uFFFD"), "must be valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return Invalid(field, s, "must not contain control characters")
		}
	}
	return nil
}
