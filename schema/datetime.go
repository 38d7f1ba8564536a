package schema

// The "date-time" format check of github.com/santhosh-tekuri/jsonschema/v5
// (v5.3.1, format.go: isDateTime, isDate, isTime), ported to bytes with
// its quirks kept: each two-digit field is read by strconv.Atoi, so "+5"
// and "-0" pass; the date is time.Parse("2006-01-02"); a leap second must
// be 23:59 once the offset is applied, and that sum is not wrapped past
// midnight. TestDateTimeMatchesLibrary and FuzzDateTimeMatchesLibrary
// compare it with the library.
//
// Derived from github.com/santhosh-tekuri/jsonschema (Santhosh Kumar
// Tekuri), Apache License 2.0; changed to take bytes.

func isDateTime(s []byte) bool {
	if len(s) < 20 { // yyyy-mm-ddThh:mm:ssZ
		return false
	}
	if s[10] != 'T' && s[10] != 't' {
		return false
	}
	return isDate(s[:10]) && isTime(s[11:])
}

// isDate is time.Parse("2006-01-02", s) == nil.
func isDate(s []byte) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for _, i := range [...]int{0, 1, 2, 3, 5, 6, 8, 9} {
		if !isDigit(s[i]) {
			return false
		}
	}
	year := int(s[0]-'0')*1000 + int(s[1]-'0')*100 + int(s[2]-'0')*10 + int(s[3]-'0')
	month := int(s[5]-'0')*10 + int(s[6]-'0')
	day := int(s[8]-'0')*10 + int(s[9]-'0')
	if month < 1 || month > 12 || day < 1 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month-1]
	if month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0) {
		days = 29
	}
	return day <= days
}

// atoi2 is strconv.Atoi on two bytes.
func atoi2(a, b byte) (int, bool) {
	switch {
	case isDigit(a) && isDigit(b):
		return int(a-'0')*10 + int(b-'0'), true
	case a == '+' && isDigit(b):
		return int(b - '0'), true
	case a == '-' && isDigit(b):
		return -int(b - '0'), true
	}
	return 0, false
}

func inRange(a, b byte, min, max int) (int, bool) {
	n, ok := atoi2(a, b)
	return n, ok && n >= min && n <= max
}

func isTime(str []byte) bool {
	// hh:mm:ss
	if len(str) < 9 || str[2] != ':' || str[5] != ':' {
		return false
	}
	h, ok := inRange(str[0], str[1], 0, 23)
	if !ok {
		return false
	}
	m, ok := inRange(str[3], str[4], 0, 59)
	if !ok {
		return false
	}
	s, ok := inRange(str[6], str[7], 0, 60)
	if !ok {
		return false
	}
	str = str[8:]

	if str[0] == '.' {
		str = str[1:]
		digits := 0
		for len(str) > 0 && isDigit(str[0]) {
			digits++
			str = str[1:]
		}
		if digits == 0 {
			return false
		}
	}
	if len(str) == 0 {
		return false
	}

	if str[0] == 'z' || str[0] == 'Z' {
		if len(str) != 1 {
			return false
		}
	} else {
		// +hh:mm
		if len(str) != 6 || str[3] != ':' {
			return false
		}
		var sign int
		switch str[0] {
		case '+':
			sign = -1
		case '-':
			sign = +1
		default:
			return false
		}
		zh, ok := inRange(str[1], str[2], 0, 23)
		if !ok {
			return false
		}
		zm, ok := inRange(str[4], str[5], 0, 59)
		if !ok {
			return false
		}
		hm := (h*60 + m) + sign*(zh*60+zm)
		if hm < 0 {
			hm += 24 * 60
		}
		h, m = hm/60, hm%60
	}

	if s == 60 && (h != 23 || m != 59) {
		return false
	}
	return true
}
