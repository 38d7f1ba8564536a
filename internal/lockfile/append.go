package lockfile

import (
	"io"
	"os"
)

// AppendWhole appends data to f, opened O_APPEND and size bytes long, by
// its only appender (under a lock), whole or not at all: a write cut short
// (a full disk) is cut back to size, so that nothing torn is left for the
// next append to run on from (a pin line, a witness's note).
func AppendWhole(f *os.File, size int64, data string) error {
	if _, err := io.WriteString(f, data); err != nil {
		_ = f.Truncate(size)
		return err
	}
	return nil
}
