// Package localeenv keeps Fyne from logging "Error parsing user locale C"
// under the C locale. Import it (blank) first in main; it has no API.
//
// Fyne's lang package reads the user's locale in its package init, through
// github.com/jeandeaual/go-locale: the first non-empty of LC_ALL,
// LC_MESSAGES and LANG. Exactly "C" or "POSIX" (or nothing) it treats as "no
// preference", but a C locale with a codeset — "C.UTF-8", the default of
// containers, SSH sessions and CI — comes back as the language "C", which is
// not a language tag, and Fyne logs an error on stderr before every command
// and again whenever the GUI asks for the locale.
//
// The fix states the language such a locale means: LANGUAGE=en (what a C
// locale's untranslated messages are), set only when the locale is a C or
// POSIX variant and LANGUAGE is unset. go-locale reads LANGUAGE before
// parsing the C name, so Fyne sees "en". LC_ALL, LC_MESSAGES and LANG are
// left alone: the agents the app starts inherit the environment, and their
// tools must keep the user's codeset. LANGUAGE only picks gettext message
// catalogues, which a C locale does not use, so children are unaffected.
//
// Why this runs before Fyne's init: Go initialises packages in import-path
// order, each once its imports are done. fyne.io/fyne/v2/lang needs
// golang.org/x/text, which sorts after this module's github.com path, so
// this package (standard library imports only) is initialised first. The
// binary test in the root package (TestNoLocaleErrorUnderCLocale) fails if a
// Fyne upgrade ever changes that.
package localeenv

import (
	"os"
	"strings"
)

func init() { Fix(os.Getenv, os.Setenv) }

// Fix sets LANGUAGE=en when the locale go-locale would read is a C or POSIX
// variant with a codeset or modifier and LANGUAGE is empty; it reports
// whether it changed anything. getenv and setenv are the environment's
// (parameters so tests need not change the process's).
func Fix(getenv func(string) string, setenv func(string, string) error) bool {
	// A LANGUAGE the user chose is kept, unless it is itself a C locale
	// with a codeset ("C.UTF-8"), which Fyne cannot parse either.
	if lang := getenv("LANGUAGE"); lang != "" && !needsLanguage(lang) {
		return false
	}
	if !needsLanguage(effectiveLocale(getenv)) {
		return false
	}
	return setenv("LANGUAGE", "en") == nil
}

// effectiveLocale is the variable go-locale (and POSIX, for messages) uses.
func effectiveLocale(getenv func(string) string) string {
	for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := getenv(name); v != "" {
			return v
		}
	}
	return ""
}

// needsLanguage reports whether loc is a C/POSIX locale that go-locale
// would not recognise as one: "C.UTF-8", "POSIX.utf8", "C@euro". Exactly
// "C", "POSIX" and "" are recognised already.
func needsLanguage(loc string) bool {
	if loc == "" || loc == "C" || loc == "POSIX" {
		return false
	}
	base := loc
	if i := strings.IndexAny(base, ".@"); i >= 0 {
		base = base[:i]
	}
	return base == "C" || base == "POSIX"
}
