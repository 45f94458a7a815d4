package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// recordingSupervisor accepts every change and remembers what it was given,
// so a fuzzed body that decodes reaches it whole.
type recordingSupervisor struct {
	fakeSupervisor
	launched []LaunchRequest
	prompts  []string
}

func (f *recordingSupervisor) Launch(_ context.Context, req LaunchRequest) (s sessions.Session, err error) {
	f.launched = append(f.launched, req)
	return s, nil
}
func (f *recordingSupervisor) Send(_ context.Context, id, prompt string) (s sessions.Session, err error) {
	f.prompts = append(f.prompts, prompt)
	return s, nil
}
func (f *recordingSupervisor) Forget(context.Context, string, storage.TimelineChoice) (s sessions.Session, err error) {
	return s, nil
}
func (f *recordingSupervisor) Answer(context.Context, string, string, bool, string) (s sessions.Session, err error) {
	return s, nil
}

type recordingSettings struct{ fakeSettings }

func (f *recordingSettings) UpdateMany(_ context.Context, changes []SettingChange) ([]settings.SetResult, error) {
	return make([]settings.SetResult, len(changes)), nil
}

// FuzzRequestBodies sends arbitrary bodies to every route that decodes one:
// none may panic, every answer is JSON with a status the API documents, and
// a body that is not valid JSON is a 400 the client reads as invalid.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"agent":"claude","cwd":"/tmp","prompt":"hi"}`,
		`{"prompt":"fix it"}`,
		`{"allow":true,"message":""}`,
		`{"value":"30s"}`,
		`[{"key":"notify.waiting_on_user","value":"false"}]`,
		`{"prompt":"\u001b[31m"}`,
		`{"agent":1}`, `[]`, `{}`, `null`, ``, `{`, `{"unknown":1}`,
		strings.Repeat("[", 10000),
		`{"prompt":"` + strings.Repeat("x", 1<<16) + `"}`,
	} {
		for route := range 5 {
			f.Add(route, []byte(seed))
		}
	}
	routes := []struct{ method, path string }{
		{"POST", "/v1/sessions"},
		{"POST", "/v1/sessions/s1/prompt"},
		{"POST", "/v1/sessions/s1/permission"},
		{"POST", "/v1/sessions/s1/forget"},
		{"PUT", "/v1/settings/notify.waiting_on_user"},
		{"PATCH", "/v1/settings"},
	}
	f.Fuzz(func(t *testing.T, route int, body []byte) {
		if route < 0 {
			route = -route
		}
		rt := routes[route%len(routes)]
		sup := &recordingSupervisor{fakeSupervisor: fakeSupervisor{bus: NewBus()}}
		a := &API{rt: sup, settings: &recordingSettings{}, closing: make(chan struct{})}
		w := httptest.NewRecorder()
		a.routes().ServeHTTP(w, httptest.NewRequest(rt.method, rt.path, bytes.NewReader(body)))
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest:
		default:
			t.Fatalf("%s %s %q: status %d", rt.method, rt.path, body, w.Code)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %s: the answer is not JSON: %q", rt.method, rt.path, w.Body.Bytes())
		}
		if !json.Valid(body) && w.Code != http.StatusBadRequest {
			t.Fatalf("%s %s: invalid JSON %q answered %d", rt.method, rt.path, body, w.Code)
		}
		if w.Code == http.StatusBadRequest {
			var e apiError
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Kind != "invalid" || e.Error == "" {
				t.Fatalf("a 400 without its kind and message: %q", w.Body.Bytes())
			}
		}
	})
}
