package termloc

import "testing"

func TestConsoleHolder(t *testing.T) {
	wt := []Stat{{PID: 40, Comm: "pwsh.exe"}, {PID: 30, Comm: "OpenConsole.exe"}, {PID: 20, Comm: "WindowsTerminal.exe"}, {PID: 10, Comm: "explorer.exe"}}
	classic := []Stat{{PID: 40, Comm: "cmd.exe"}, {PID: 10, Comm: "explorer.exe"}}
	for _, tc := range []struct {
		name    string
		chain   []Stat
		windows []int
		want    int
	}{
		{"Windows Terminal above the shell", wt, []int{20, 10}, 20},
		{"a classic console lends its window to the shell", classic, []int{40, 10}, 40},
		{"no window below the desktop shell", classic, []int{10}, 0},
		{"no ancestors", nil, []int{1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ConsoleHolder(tc.chain, func(pid int) bool {
				for _, w := range tc.windows {
					if w == pid {
						return true
					}
				}
				return false
			})
			if (got == nil) != (tc.want == 0) || got != nil && got.PID != tc.want {
				t.Errorf("holder %+v, want pid %d", got, tc.want)
			}
		})
	}
}
