package schema

import "github.com/lockledger/lockledger/events"

// The patterns of the schema files, by hand (internal/cmd/schemagen/gen names
// the function of each). TestFastPatterns checks each against the regexp.

func isDigit(c byte) bool       { return c >= '0' && c <= '9' }
func isNumberStart(c byte) bool { return c == '-' || isDigit(c) }

// ^[0-9A-HJKMNP-TV-Z]{26}$
func isEventID(b []byte) bool {
	if len(b) != 26 {
		return false
	}
	for _, c := range b {
		if !ulidChar[c] {
			return false
		}
	}
	return true
}

var ulidChar = func() (t [256]bool) {
	for _, c := range []byte("0123456789ABCDEFGHJKMNPQRSTVWXYZ") {
		t[c] = true
	}
	return t
}()

// ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$
func isEventTime(b []byte) bool {
	const tmpl = "dddd-dd-ddTdd:dd:dd.dddddddddZ"
	if len(b) != len(tmpl) {
		return false
	}
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] == 'd' {
			if !isDigit(b[i]) {
				return false
			}
		} else if b[i] != tmpl[i] {
			return false
		}
	}
	return true
}

// ^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$ and ^[A-Za-z0-9_.:-]{1,128}$:
// the ledger's own checks (FuzzFastMatchesSchema holds them to the patterns).
func isLockName(b []byte) bool  { return events.IsLockName(b) }
func isRequestID(b []byte) bool { return events.IsRequestID(b) }

// ^sha256:[0-9a-f]{64}$
func isSHA256Ref(b []byte) bool {
	const prefix = "sha256:"
	return len(b) == len(prefix)+64 && string(b[:len(prefix)]) == prefix && isHexHash(b[len(prefix):])
}

// isHexHash is ^[0-9a-f]{64}$: a chain hash.
func isHexHash(b []byte) bool {
	if len(b) != 64 {
		return false
	}
	for _, c := range b {
		if !isDigit(c) && !(c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
