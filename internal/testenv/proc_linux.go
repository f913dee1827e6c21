package testenv

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL, // set by the kernel after the credential change, so it holds
		Credential: cred,
	}
}

// procStat reads a process's state letter and parent pid from /proc.
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil || len(f[0]) == 0 {
		return 0, 0, false
	}
	return f[0][0], ppid, true
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, _, ok := procStat(pid)
	return ok && st != 'Z'
}

// children lists the live direct children of pid.
func children(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, pp, ok := procStat(c); ok && pp == pid && st != 'Z' {
			out = append(out, c)
		}
	}
	return out
}
