package terminal

import (
	"strconv"
	"strings"
)

func itoa(n int) string { return strconv.Itoa(n) }

func splitNul(b []byte) []string { return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") }
