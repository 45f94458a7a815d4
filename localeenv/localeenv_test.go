package localeenv

import "testing"

func TestFix(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool // LANGUAGE=en set
	}{
		{"C.UTF-8", map[string]string{"LANG": "C.UTF-8"}, true},
		{"C.utf8", map[string]string{"LANG": "C.utf8"}, true},
		{"POSIX with codeset", map[string]string{"LANG": "POSIX.UTF-8"}, true},
		{"C with modifier", map[string]string{"LANG": "C@euro"}, true},
		{"LC_ALL wins over LANG", map[string]string{"LC_ALL": "C.UTF-8", "LANG": "de_DE.UTF-8"}, true},
		{"LC_MESSAGES before LANG", map[string]string{"LC_MESSAGES": "C.UTF-8", "LANG": "fr_FR.UTF-8"}, true},
		{"real locale in LC_ALL", map[string]string{"LC_ALL": "en_GB.UTF-8", "LANG": "C.UTF-8"}, false},
		{"plain C is understood already", map[string]string{"LANG": "C"}, false},
		{"plain POSIX is understood already", map[string]string{"LANG": "POSIX"}, false},
		{"unset", map[string]string{}, false},
		{"real locale", map[string]string{"LANG": "en_US.UTF-8"}, false},
		{"LANGUAGE already chosen", map[string]string{"LANG": "C.UTF-8", "LANGUAGE": "fr"}, false},
		{"LANGUAGE itself a C locale with a codeset", map[string]string{"LANG": "C.UTF-8", "LANGUAGE": "C.UTF-8"}, true},
		{"CA is not C", map[string]string{"LANG": "ca_ES.UTF-8"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range tt.env {
				env[k] = v
			}
			changed := Fix(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
			if changed != tt.want {
				t.Errorf("Fix changed=%v, want %v", changed, tt.want)
			}
			want := tt.env["LANGUAGE"]
			if tt.want {
				want = "en"
			}
			if env["LANGUAGE"] != want {
				t.Errorf("LANGUAGE = %q, want %q", env["LANGUAGE"], want)
			}
			for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
				if env[k] != tt.env[k] {
					t.Errorf("%s changed to %q", k, env[k])
				}
			}
		})
	}
}
