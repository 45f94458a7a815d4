package sessions

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestTimelineDetailEncodesAsTheMapsDid: every detail the supervisor writes
// encodes byte for byte as the untyped map it replaced, so stored timelines,
// the local API and the e2e suite (which read detail as a map) see the same
// JSON.
func TestTimelineDetailEncodesAsTheMapsDid(t *testing.T) {
	cases := []struct {
		name string
		old  map[string]any
		new  TimelineDetail
	}{
		{"observation", map[string]any{"message": "10 min silent"}, TimelineDetail{Message: "10 min silent"}},
		{"observed state change", map[string]any{"message": "gone", "from": "working", "to": "interrupted"},
			TimelineDetail{Message: "gone", From: "working", To: "interrupted"}},
		{"state change with reason and failure", map[string]any{"message": "m", "from": "working", "to": "waiting_on_user", "reason": "permission", "failure": "rate_limit"},
			TimelineDetail{Message: "m", From: "working", To: "waiting_on_user", Reason: "permission", Failure: "rate_limit"}},
		{"intent", map[string]any{"message": "nudge <1/2> & more", "action": "nudge", "outcome": "pending"},
			TimelineDetail{Message: "nudge <1/2> & more", Action: "nudge", Outcome: "pending"}},
		{"uncertain", map[string]any{"message": "m", "intent_id": int64(1 << 40)}, TimelineDetail{Message: "m", IntentID: 1 << 40}},
		{"boot with an orphan", map[string]any{"message": "m", "from": "working", "to": "interrupted", "orphan": "killed 12"},
			TimelineDetail{Message: "m", From: "working", To: "interrupted", Orphan: "killed 12"}},
		{"process started", map[string]any{"message": "m", "pid": 4242}, TimelineDetail{Message: "m", PID: 4242}},
		{"prompt", map[string]any{"message": "m", "by": "user"}, TimelineDetail{Message: "m", By: "user"}},
		{"input blocked", map[string]any{"message": "m", "bytes": 65536}, TimelineDetail{Message: "m", Bytes: 65536}},
		{"permission denied", map[string]any{"message": "m", "tool": "Bash", "allow": false}, TimelineDetail{Message: "m", Tool: "Bash", Allow: Flag(false)}},
		{"permission approved", map[string]any{"message": "m", "tool": "Bash", "allow": true}, TimelineDetail{Message: "m", Tool: "Bash", Allow: Flag(true)}},
		{"nudge arrived", map[string]any{"message": "m", "urgent": false}, TimelineDetail{Message: "m", Urgent: Flag(false)}},
		{"nudge failed", map[string]any{"message": "m", "action": "nudge"}, TimelineDetail{Message: "m", Action: "nudge"}},
		{"resumed from", map[string]any{"message": "m", "resumed_from": "a", "by": "supervisor"}, TimelineDetail{Message: "m", ResumedFrom: "a", By: "supervisor"}},
		{"resumed as", map[string]any{"message": "m", "resumed_as": "b", "by": "user"}, TimelineDetail{Message: "m", ResumedAs: "b", By: "user"}},
		{"empty message", map[string]any{"message": ""}, TimelineDetail{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.old)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.new.JSON(); string(got) != string(want) {
				t.Errorf("encoded %s, the map wrote %s", got, want)
			}
			var back TimelineDetail
			if err := json.Unmarshal(want, &back); err != nil {
				t.Fatalf("decoding %s: %v", want, err)
			}
			if !reflect.DeepEqual(back, tc.new) {
				t.Errorf("decoded %s as %+v, want %+v", want, back, tc.new)
			}
		})
	}
}

// TestTimelineDetailKeepsUnknownKeys: a row an older or newer build wrote
// decodes, and encodes again to the same bytes, keys this build does not
// know included.
func TestTimelineDetailKeepsUnknownKeys(t *testing.T) {
	for _, stored := range []string{
		`{"action":"nudge","attempt":2,"message":"nudge 1","outcome":"ok"}`,
		`{"alive":true,"pid":4242}`,
		`{"extra":{"nested":[1,2]},"from":"working","message":"m","to":"idle"}`,
	} {
		var d TimelineDetail
		if err := json.Unmarshal([]byte(stored), &d); err != nil {
			t.Fatalf("decoding %s: %v", stored, err)
		}
		var want map[string]any
		_ = json.Unmarshal([]byte(stored), &want)
		want["message"] = d.Message // every row written from now on has a message
		wantJSON, _ := json.Marshal(want)
		if got := d.JSON(); string(got) != string(wantJSON) {
			t.Errorf("%s came back as %s, want %s", stored, got, wantJSON)
		}
	}
}

// TestTimelineDetailFieldsInKeyOrder: the fields are declared in the order
// of their JSON keys (what makes the encoding the maps' one), and each has a
// key. A field added out of order fails here.
func TestTimelineDetailFieldsInKeyOrder(t *testing.T) {
	var keys []string
	typ := reflect.TypeFor[TimelineDetail]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			t.Errorf("field %s has no JSON key", f.Name)
		}
		keys = append(keys, name)
	}
	if !slices.IsSorted(keys) {
		t.Errorf("the fields' keys are not in order: %v", keys)
	}
	if len(keys) != len(timelineDetailKeys) {
		t.Errorf("known keys %v, fields %v", timelineDetailKeys, keys)
	}
}
