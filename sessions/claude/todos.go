package claude

import (
	"encoding/json"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The tools Claude Code keeps its task list with: TodoWrite writes the
// whole list each time (up to 2.0, and in 2.1 when CLAUDE_CODE_ENABLE_TASKS
// is off); TaskCreate and TaskUpdate, which replace it by default in 2.1
// (2.1.197 enables TodoWrite only with that variable set false: measured
// in its binary), create one task and change one task's status.
const (
	toolTodoWrite  = "TodoWrite"
	toolTaskCreate = "TaskCreate"
	toolTaskUpdate = "TaskUpdate"
)

func isTodoTool(name string) bool {
	return name == toolTodoWrite || name == toolTaskCreate || name == toolTaskUpdate
}

// todoList is the task list as one stream's tool calls built it: the tasks
// created, and each task's last status by id. A process that resumes a
// session starts with none of the earlier tasks; their updates then count
// against a total they raise (TodoProgress.Clamped), never below it.
type todoList struct {
	// list is the last TodoWrite's counts.
	list    sessions.TodoProgress
	created int
	deleted int
	status  map[string]string
	// fromTasks: the Task tools are in use, so their counts are the list.
	fromTasks bool
}

// todoInput is the part of an assistant line the task tools' inputs need:
// a second parse, paid only by a line that calls one of them.
type todoInput struct {
	Message struct {
		Content []struct {
			ID    string `json:"id"`
			Input struct {
				Todos  []sessions.TodoItem `json:"todos"`
				TaskID string              `json:"taskId"`
				Status string              `json:"status"`
			} `json:"input"`
			Name string `json:"name"`
		} `json:"content"`
	} `json:"message"`
}

// update applies the task tool call id of line and returns the list as it
// now stands; nil when the line's input does not parse.
func (l *todoList) update(line []byte, id string) *sessions.TodoProgress {
	var in todoInput
	if json.Unmarshal(line, &in) != nil {
		return nil
	}
	for _, b := range in.Message.Content {
		if b.ID != id {
			continue
		}
		switch b.Name {
		case toolTodoWrite:
			l.list, l.fromTasks = sessions.TodosOf(b.Input.Todos), false
		case toolTaskCreate:
			l.created++
			l.fromTasks = true
		case toolTaskUpdate:
			if b.Input.Status == "" || b.Input.TaskID == "" {
				return nil // a change of subject or owner: the counts stand
			}
			if b.Input.Status == "deleted" {
				l.deleted++
			}
			if l.status == nil {
				l.status = map[string]string{}
			}
			if _, ok := l.status[b.Input.TaskID]; ok || len(l.status) < maxTracked {
				l.status[b.Input.TaskID] = b.Input.Status
			}
			l.fromTasks = true
		}
		t := l.progress()
		return &t
	}
	return nil
}

func (l *todoList) progress() sessions.TodoProgress {
	if !l.fromTasks {
		return l.list
	}
	t := sessions.TodoProgress{Total: max(l.created-l.deleted, 0)}
	for _, st := range l.status {
		switch st {
		case "completed":
			t.Completed++
		case "in_progress":
			t.InProgress++
		}
	}
	return t.Clamped()
}
