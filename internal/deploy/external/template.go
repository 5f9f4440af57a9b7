package external

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/svclab/svclab/internal/spec"
)

// ref is a template: a dotted key of the spec in braces,
// "{deploy.external.replicas}" or "{load.rate}". A brace around anything
// else (a JSON argument) is left as written.
var ref = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)+)\}`)

// expand replaces every template of argv with its key's value in s, the
// run's effective spec, so that a factor's level reaches the command.
// Errors say which element names which key, every one of them.
func expand(s *spec.Spec, argv []string) ([]string, error) {
	out := make([]string, len(argv))
	var errs []error
	for i, a := range argv {
		var err []error
		out[i], err = expandArg(s, i, a)
		errs = append(errs, err...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// expandArg expands the templates of a, argv[i], with an error for each
// that names no key or no scalar.
func expandArg(s *spec.Spec, i int, a string) (string, []error) {
	var errs []error
	out := ref.ReplaceAllStringFunc(a, func(m string) string {
		key := m[1 : len(m)-1]
		v, ok := s.Lookup(key)
		if !ok {
			errs = append(errs, fmt.Errorf("element %d: %s names no key of the spec%s", i+1, m, hint(s, key)))
			return m
		}
		str, err := scalar(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("element %d: %s is %w", i+1, m, err))
		}
		return str
	})
	return out, errs
}

// hint suggests a key of [deploy.external] for a template that names
// none.
func hint(s *spec.Spec, key string) string {
	if !strings.HasPrefix(key, Table+".") {
		return ""
	}
	raw, _ := s.Lookup(Table)
	t, _ := raw.(map[string]any)
	var names []string
	for name := range t {
		names = append(names, name)
	}
	return spec.DidYouMean(strings.TrimPrefix(key, Table+"."), names)
}

// scalar writes a TOML scalar as a command-line argument.
func scalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	case fmt.Stringer: // dates and times
		return v.String(), nil
	}
	return "", fmt.Errorf("not a scalar (%T)", v)
}

// refs lists the keys argv's templates name.
func refs(argv []string) []string {
	var out []string
	for _, a := range argv {
		for _, m := range ref.FindAllStringSubmatch(a, -1) {
			out = append(out, m[1])
		}
	}
	return out
}
