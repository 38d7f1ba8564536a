package termtext

import (
	"errors"
	"testing"
	"time"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"alice", "alice"},
		{"héllo wörld ✓ 日本", "héllo wörld ✓ 日本"},
		{`back\slash`, `back\slash`},
		{"a\nb", `a\nb`},
		{"a\r\nb", `a\r\nb`},
		{"a\tb", `a\tb`},
		{"\x1b[2J", `\x1b[2J`},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"rtl\u202eexe.txt", `rtl\u202eexe.txt`},
		{"isolate\u2066x\u2069", `isolate\u2066x\u2069`},
		{"line\u2028sep\u2029", `line\u2028sep\u2029`},
		{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
		{"ok é then \xfe", `ok é then \xfe`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := Safe(c.in); got != (c.in == c.want) {
			t.Errorf("Safe(%q) = %v", c.in, got)
		}
		for i := 0; i < len(Escape(c.in)); i++ {
			if b := Escape(c.in)[i]; b < 0x20 || b == 0x7f {
				t.Errorf("Escape(%q) keeps byte %#x", c.in, b)
			}
		}
	}
}

type name string

type holder struct{ actor string }

func (h *holder) String() string { return "holder " + h.actor }

type failure struct{ path string }

func (f *failure) Error() string { return "failed at " + f.path }

func TestSprintfEscapesTextArguments(t *testing.T) {
	var nilHolder *holder
	var nilErr *failure
	got := Sprintf("%s|%s|%v|%s|%d|%s|%s|%v|%s|%v|%d\n", "a\nb", name("n\x1b"), errors.New("e\r"), &holder{"x\ty"},
		42, 1500*time.Millisecond, []byte("by\x00"), nilHolder, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), nilErr,
		[]int{1, 2})
	want := `a\nb|n\x1b|e\r|holder x\ty|42|1.5s|by\x00|<nil>|2026-01-02 03:04:05 +0000 UTC|<nil>|[1 2]` + "\n"
	if got != want {
		t.Errorf("Sprintf = %q, want %q", got, want)
	}
}

func TestEscapeIsIdempotent(t *testing.T) {
	for _, s := range []string{"a\nb\x1b[2J", "bad\xff", "\u202e\u0085", `already \x1b`} {
		once := Escape(s)
		if twice := Escape(once); twice != once {
			t.Errorf("Escape(Escape(%q)) = %q, want %q", s, twice, once)
		}
		if !Safe(once) {
			t.Errorf("Safe(Escape(%q)) = false", s)
		}
	}
}

// Safe reports whether s is shown unchanged by Escape.
func Safe(s string) bool { return firstUnsafe(s) < 0 }
