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
	switch {
	case u == "":
		return "runs as root (it names no user)"
	case u == "0" || u == "root":
		return fmt.Sprintf("runs as root (user %q)", user)
	}
	if _, err := strconv.ParseUint(u, 10, 32); err != nil {
		return fmt.Sprintf("runs as user %q, a name that cannot be checked", u)
	}
	return ""
}
