package spec

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
)

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

// ErrorKeys are the keys of the KeyErrors in err, an errors.Join or one
// error, in order: what an app's Validate reported, to compare in tests
// and to tell which keys a check refused.
func ErrorKeys(err error) []string {
	if err == nil {
		return nil
	}
	var keys []string
	for _, e := range Unjoin(err) {
		if ke := (*KeyError)(nil); errors.As(e, &ke) {
			keys = append(keys, ke.Key)
		}
	}
	return keys
}

// ErrorLines are the errors in err, an errors.Join or one error, as "LINE
// KEY" for each located in file and as their text otherwise, in order:
// where a check put each mistake, to compare in tests.
func ErrorLines(err error, file string) []string {
	var out []string
	for _, e := range Unjoin(err) {
		if e == nil {
			continue
		}
		if se := (*Error)(nil); errors.As(e, &se) && se.File == file {
			out = append(out, fmt.Sprintf("%d %s", se.Line, se.Key))
		} else {
			out = append(out, e.Error())
		}
	}
	return out
}

// MaxErrors bounds how many problems one check of a spec reports: enough
// to fix a file in one pass, few enough to read.
const MaxErrors = 50

// maxKept bounds the distinct errors Errors keeps to sort; past it, an
// error is only counted. A design of a million points, each with its own
// mistake, so costs a set of hashes, not a million messages.
const maxKept = 10 * MaxErrors

// Errors collects the problems found checking a spec, from every table and
// every design point, so that one invocation reports them all. An error
// added twice (the same text, as design points that share a mistake give
// it) counts once.
type Errors struct {
	kept []error
	seen map[uint64]bool
	more int // distinct errors past maxKept, and those a joined "and N more" stood for
	// wrong holds the keys of the errors kept, for AddLater.
	wrong map[string]bool
}

// AddLater adds err, what a check found that ran after those whose errors
// were added and read their results, leaving out its errors at a key
// already found wrong, or inside or around one: the check saw the key's
// default (Decode leaves a wrong key out), not the value written, so it
// would report a mistake that is not there. So too an error at a key the
// spec does not write, beside a key found wrong: that one is likely the
// key misspelt ("rte" for a missing "rate"), and its error says so. An
// app's Validate after the decoding of [app], a deployment's resolution
// after [deploy], are such later checks.
func (es *Errors) AddLater(err error) {
	// Against the errors of the checks before this one: its own errors
	// are all about what it saw.
	wrong := slices.Collect(maps.Keys(es.wrong))
	var add func(error)
	add = func(err error) {
		for _, e := range Unjoin(err) {
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				add(errors.Join(j.Unwrap()...))
				continue
			}
			var se *Error
			if e != nil && errors.As(e, &se) && (foundWrong(wrong, se.Key, se.ofName) || se.unwritten && foundWrongBeside(wrong, se.Key)) {
				continue
			}
			es.Add(e)
		}
	}
	add(err)
}

// foundWrongBeside reports whether a key of wrong is in the table that
// holds key.
func foundWrongBeside(wrong []string, key string) bool {
	i := strings.LastIndexAny(key, ".[")
	if i < 0 {
		return false
	}
	table := key[:i]
	for _, w := range wrong {
		if under(w, table) {
			return true
		}
	}
	return false
}

// foundWrong reports whether key, or a key it is under or one under it,
// is one of wrong; a whole table (a key with no dot) only when it is one,
// and so too a table an error is about as a whole (ofName).
func foundWrong(wrong []string, key string, ofName bool) bool {
	if key == "" {
		return false
	}
	for _, w := range wrong {
		if w == key || under(key, w) || !ofName && strings.Contains(key, ".") && under(w, key) {
			return true
		}
	}
	return false
}

// under reports whether key lies inside parent.
func under(key, parent string) bool {
	return strings.HasPrefix(key, parent+".") || strings.HasPrefix(key, parent+"[")
}

// Add adds err, and each error of an errors.Join in it; nil adds nothing.
func (es *Errors) Add(err error) {
	if err == nil {
		return
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			es.Add(e)
		}
		return
	}
	var m moreErrors
	if errors.As(err, &m) {
		es.more += m.n
		return
	}
	h := fnv.New64a()
	h.Write([]byte(err.Error()))
	sum := h.Sum64()
	if es.seen[sum] {
		return
	}
	if es.seen == nil {
		es.seen = map[uint64]bool{}
	}
	es.seen[sum] = true
	if len(es.kept) == maxKept {
		es.more++
		return
	}
	es.kept = append(es.kept, err)
	var se *Error
	if errors.As(err, &se) && se.Key != "" {
		if es.wrong == nil {
			es.wrong = map[string]bool{}
		}
		es.wrong[se.Key] = true
		if se.about != "" {
			es.wrong[se.about] = true
		}
	}
}

// foundAt reports whether an error was added at one of keys, or inside
// one.
func (es *Errors) foundAt(keys ...string) bool {
	for w := range es.wrong {
		for _, k := range keys {
			if w == k || under(w, k) {
				return true
			}
		}
	}
	return false
}

// Len is how many distinct errors were added.
func (es *Errors) Len() int { return len(es.kept) + es.more }

// Err joins the errors added, in file order (those that name no line, a
// --set flag or the whole file, first), at most MaxErrors of them and a
// line counting the rest; nil when there are none.
func (es *Errors) Err() error {
	if len(es.kept) == 0 && es.more == 0 {
		return nil
	}
	sorted := slices.Clone(es.kept)
	slices.SortStableFunc(sorted, func(a, b error) int { return cmp.Compare(errorLine(a), errorLine(b)) })
	rest := es.more
	if len(sorted) > MaxErrors {
		rest += len(sorted) - MaxErrors
		sorted = sorted[:MaxErrors]
	}
	if rest > 0 {
		sorted = append(sorted, moreErrors{file: fileOf(sorted), n: rest})
	}
	if len(sorted) == 1 {
		return sorted[0]
	}
	return errors.Join(sorted...)
}

// Join is Errors for errors at hand: it flattens, drops repeats, sorts by
// line and bounds them.
func Join(errs ...error) error {
	var es Errors
	for _, e := range errs {
		es.Add(e)
	}
	return es.Err()
}

// moreErrors stands for the errors past MaxErrors.
type moreErrors struct {
	file string
	n    int
}

func (m moreErrors) Error() string {
	prefix := ""
	if m.file != "" {
		prefix = m.file + ": "
	}
	return fmt.Sprintf("%sand %d more errors", prefix, m.n)
}

func errorLine(err error) int {
	var se *Error
	if errors.As(err, &se) && se.Flag == "" {
		return se.Line
	}
	return 0
}

func fileOf(errs []error) string {
	for _, err := range errs {
		var se *Error
		if errors.As(err, &se) && se.File != "" {
			return se.File
		}
	}
	return ""
}
