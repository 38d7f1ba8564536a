package invocation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockledger/lockledger/events"
)

// ReadFile gives a regular file, a pipe (written in parts smaller and
// larger than its reads) and a reader that is no file whole up to their
// limit, and refuses one byte more as bad input naming the field and the
// limit, never a part of it.
func TestReadFileRefusesInputPastItsLimit(t *testing.T) {
	const limit = 10000
	dir := t.TempDir()
	for _, n := range []int{0, 1, 4096, limit - 1, limit, limit + 1, 3 * limit} {
		want := bytes.Repeat([]byte("k"), n)
		check := func(kind string, got []byte, err error) {
			t.Helper()
			var inv *events.InvalidError
			switch {
			case n <= limit && (err != nil || !bytes.Equal(got, want)):
				t.Errorf("%s of %d bytes, limit %d: %d bytes, %v; want them whole", kind, n, limit, len(got), err)
			case n > limit && (!errors.As(err, &inv) || inv.Field != "--key" || inv.Rule != fmt.Sprintf("holds more than %d bytes, the most it may hold", limit) || got != nil):
				t.Errorf("%s of %d bytes, limit %d: %d bytes, %v; want it refused naming --key and the limit", kind, n, limit, len(got), err)
			}
		}

		file := filepath.Join(dir, fmt.Sprint("file", n))
		if err := os.WriteFile(file, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(context.Background(), "--key", file, limit)
		check("a regular file", got, err)

		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		written := make(chan error, 1)
		go func() {
			defer w.Close()
			for rest := want; len(rest) > 0; {
				part := min(len(rest), 3000)
				if _, err := w.Write(rest[:part]); err != nil {
					written <- err
					return
				}
				rest = rest[part:]
			}
			written <- nil
		}()
		got, err = ReadFile(context.Background(), "--key", fmt.Sprintf("/proc/self/fd/%d", r.Fd()), limit)
		r.Close() // a refusal stops reading: the writer's next write fails
		<-written
		check("a pipe", got, err)

		g := &Globals{IO: IO{In: bytes.NewReader(want)}}
		got, err = g.ReadInput(context.Background(), "--key", "-", limit, false)
		check("a reader", got, err)
	}
}
