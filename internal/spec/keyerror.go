package spec

import "errors"

// KeyError is a problem with the value of one key, found by code that knows
// what the key means (an app validating [app], the load generator validating
// [load]) but not where the spec wrote it. Locate gives it its line.
type KeyError struct {
	// Key is the dotted key, relative to its table ("rate") or absolute
	// ("load.rate").
	Key string
	Msg string
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Msg }

// Locate turns the *KeyErrors in err (which may join several) into
// *Errors at the keys' lines in table. Other errors are located at the
// table itself.
func (s *Spec) Locate(table string, err error) error {
	if err == nil {
		return nil
	}
	parts := Unjoin(err)
	out := make([]error, 0, len(parts))
	for _, p := range parts {
		var ke *KeyError
		var se *Error
		switch {
		case errors.As(p, &se):
			out = append(out, p)
		case errors.As(p, &ke):
			key := ke.Key
			if len(key) <= len(table) || key[:len(table)+1] != table+"." {
				key = table + "." + key
			}
			out = append(out, s.Errorf(key, "%s", ke.Msg))
		default:
			out = append(out, s.Errorf(table, "%v", p))
		}
	}
	return errors.Join(out...)
}

// Unjoin returns the errors an errors.Join combined, or err alone.
func Unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
