package manifest

import (
	"fmt"
	"strconv"
	"strings"
)

// RootUser says why a process run as user (an image's USER or a
// manifest's user, "name[:group]") may run as root ("" when it cannot):
// no user, user 0 or root, or a name, which only the image's /etc/passwd
// resolves.
func RootUser(user string) string {
	u, _, _ := strings.Cut(user, ":")
	if u == "" {
		return "runs as root (it names no user)"
	}
	n, err := strconv.ParseUint(u, 10, 32)
	switch {
	case u == "root" || err == nil && n == 0:
		// 00 is uid 0 too: the engine reads the number.
		return fmt.Sprintf("runs as root (user %q)", user)
	case err != nil:
		return fmt.Sprintf("runs as user %q, a name that cannot be checked", u)
	case n == 1<<32-1:
		return fmt.Sprintf("runs as user %q, which is no user (-1)", u)
	}
	return ""
}
