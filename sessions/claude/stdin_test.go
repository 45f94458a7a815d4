package claude

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

func TestStdinLines(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{
			name: "user message",
			got:  UserMessage("fix the <build> & \"ship\" it\nthen stop"),
			want: `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"fix the <build> & \"ship\" it\nthen stop"}]}}`,
		},
		{
			name: "interrupt",
			got:  InterruptRequest("req_int_1"),
			want: `{"type":"control_request","request_id":"req_int_1","request":{"subtype":"interrupt"}}`,
		},
		{
			name: "allow echoes the input",
			got:  PermissionResponse("req_7", true, "ignored", json.RawMessage(` {"command": "mkdir -p build"} `)),
			want: `{"type":"control_response","response":{"subtype":"success","request_id":"req_7","response":{"behavior":"allow","updatedInput":{"command":"mkdir -p build"}}}}`,
		},
		{
			name: "allow without a usable input sends an empty object",
			got:  PermissionResponse("req_8", true, "", nil),
			want: `{"type":"control_response","response":{"subtype":"success","request_id":"req_8","response":{"behavior":"allow","updatedInput":{}}}}`,
		},
		{
			name: "deny with a reason",
			got:  PermissionResponse("req_9", false, "not in this repo", json.RawMessage(`{"command":"rm -rf /"}`)),
			want: `{"type":"control_response","response":{"subtype":"success","request_id":"req_9","response":{"behavior":"deny","message":"not in this repo"}}}`,
		},
		{
			name: "deny without a reason",
			got:  PermissionResponse("req_10", false, "", nil),
			want: `{"type":"control_response","response":{"subtype":"success","request_id":"req_10","response":{"behavior":"deny","message":"The user denied this tool call."}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.got) != tt.want+"\n" {
				t.Errorf("got  %s\nwant %s", tt.got, tt.want)
			}
			if bytes.Count(tt.got, []byte("\n")) != 1 || !json.Valid(tt.got) {
				t.Errorf("not exactly one valid JSON line: %q", tt.got)
			}
		})
	}
}

func TestPermissionResponseRejectsBadInput(t *testing.T) {
	for _, in := range []string{"", "null", "[1,2]", `"str"`, `{"a":`, "{} {}"} {
		got := PermissionResponse("r", true, "", json.RawMessage(in))
		var v struct {
			Response struct {
				Response struct {
					UpdatedInput json.RawMessage `json:"updatedInput"`
				} `json:"response"`
			} `json:"response"`
		}
		if err := json.Unmarshal(got, &v); err != nil || string(v.Response.Response.UpdatedInput) != "{}" {
			t.Errorf("input %q: line %s (err %v)", in, got, err)
		}
	}
}

func TestArgs(t *testing.T) {
	base := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--permission-prompt-tool", "stdio"}
	tests := []struct {
		name string
		opts LaunchOptions
		want []string
	}{
		{"defaults", LaunchOptions{}, base},
		{"permission mode", LaunchOptions{PermissionMode: "acceptEdits"}, append(slices.Clone(base), "--permission-mode", "acceptEdits")},
		{"resume", LaunchOptions{ResumeID: "caa81986-6719-4f17-80e8-a43f312139de"}, append(slices.Clone(base), "--resume", "caa81986-6719-4f17-80e8-a43f312139de")},
		{"everything", LaunchOptions{PermissionMode: "plan", ResumeID: "abc", IncludePartialMessages: true},
			append(slices.Clone(base), "--include-partial-messages", "--permission-mode", "plan", "--resume", "abc")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := Args(tt.opts); !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestLaunchOptionsValidate(t *testing.T) {
	bad := []LaunchOptions{
		{PermissionMode: "--dangerously-skip-permissions"},
		{PermissionMode: "accept edits"},
		{ResumeID: "-x"},
		{ResumeID: "id;rm"},
		{ResumeID: string(make([]byte, 200))},
	}
	for _, o := range bad {
		if err := o.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", o)
		}
	}
}
