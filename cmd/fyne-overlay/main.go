// Command fyne-overlay prepares our patched Fyne (packaging/fyneoverlay) in
// a directory and prints the path of the JSON `go build -overlay` reads:
// `go build -overlay "$(go run ./cmd/fyne-overlay DIR)"`, run from the
// repository's root (the Makefile's builds).
package main

import (
	"fmt"
	"os"

	"github.com/session-supervisor/session-supervisor/packaging/fyneoverlay"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fyne-overlay DIR")
		os.Exit(2)
	}
	out, err := fyneoverlay.Write(".", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fyne-overlay:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}
