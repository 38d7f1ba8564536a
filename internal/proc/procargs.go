package proc

import (
	"bytes"
	"encoding/binary"
)

// procArgs is what macOS's sysctl kern.procargs2 returns of a process: the
// path it was executed by, its arguments and its environment as it was
// started (NUL separated, as in /proc/PID/environ). The parser is here,
// without a build constraint, so that the tests of every platform check it.
type procArgs struct {
	exe  string
	args []string
	env  []byte
}

// parseProcArgs parses kern.procargs2: argc (a 32-bit integer in the
// machine's order, little-endian on amd64 and arm64), the executable path,
// NUL padding, argc arguments, then the environment up to an empty string
// (the "apple" strings follow it). An empty argv[0] cannot be told from
// the padding: the first variable is then taken for the last argument.
func parseProcArgs(b []byte) (procArgs, bool) {
	if len(b) < 4 {
		return procArgs{}, false
	}
	argc := int(int32(binary.LittleEndian.Uint32(b)))
	rest := b[4:]
	i := bytes.IndexByte(rest, 0)
	if argc < 0 || i < 0 {
		return procArgs{}, false
	}
	p := procArgs{exe: string(rest[:i])}
	rest = bytes.TrimLeft(rest[i:], "\x00")
	for range argc {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return procArgs{}, false
		}
		p.args = append(p.args, string(rest[:i]))
		rest = rest[i+1:]
	}
	end := 0
	for end < len(rest) && rest[end] != 0 {
		i := bytes.IndexByte(rest[end:], 0)
		if i < 0 {
			end = len(rest)
			break
		}
		end += i + 1
	}
	p.env = rest[:end]
	return p, true
}
