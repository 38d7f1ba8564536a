package schema

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

// ^[a-z0-9]([a-z0-9_-]{0,126}[a-z0-9])?$
func isLockName(b []byte) bool {
	if len(b) < 1 || len(b) > 128 || !lowerAlnum(b[0]) || !lowerAlnum(b[len(b)-1]) {
		return false
	}
	for i := 1; i < len(b)-1; i++ {
		if c := b[i]; !lowerAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func lowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || isDigit(c) }

// ^[A-Za-z0-9_.:-]{1,128}$
func isRequestID(b []byte) bool {
	if len(b) < 1 || len(b) > 128 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

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
