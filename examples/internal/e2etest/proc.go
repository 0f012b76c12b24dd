package e2etest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// GroupMembers returns the live processes of the process group pgid, read
// from /proc: a zombie, gone but waiting for init to reap it, does not
// count. Without /proc it returns nil.
func GroupMembers(pgid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		s := string(data) // pid (comm) state ppid pgrp ...
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			pids = append(pids, pid)
		}
	}
	return pids
}
