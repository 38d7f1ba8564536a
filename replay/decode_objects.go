package replay

// The objects nested in an event's body (metadata, lists, targets, the
// lock record, holders, callers, unreadable files, pins), each decoded by
// the fast decoder of decode.go into the fields decode_gen.go names.

// metadata: a JSON object of strings into a new map (encoding/json makes
// one even for {}); a repeated key overwrites, as in encoding/json.
func (d *fastDecoder) metadata(p *map[string]string) bool {
	m := map[string]string{}
	*p = m
	return d.members(func(key string) bool {
		v, ok := d.str()
		m[key] = v
		return ok
	})
}

// array decodes the array at d.i into a new slice (encoding/json makes
// an empty one for []), each element by elem.
func array[T any](d *fastDecoder, p *[]T, elem func(*T) bool) bool {
	v := []T{}
	ok := d.list('[', ']', func() bool {
		var x T
		ok := elem(&x)
		v = append(v, x)
		return ok
	})
	*p = v
	return ok
}

// object decodes the members of the object at d.i into v, each into the
// field its entry of fields names (indexed by what fieldOf makes of its
// key); a key none names, or one repeated, is left to json.Unmarshal.
// The generated fields hold an entry for every field fieldOf knows.
func object[F ~uint8, T any](d *fastDecoder, fieldOf func(string) (F, bool), fields []func(*T) any, v *T) bool {
	var seen [2]uint64
	return d.members(func(key string) bool {
		f, ok := fieldOf(key)
		return ok && once(&seen, uint(f)) && d.value(fields[f](v))
	})
}
