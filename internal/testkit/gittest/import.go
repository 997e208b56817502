package gittest

import (
	"bytes"
	"fmt"
	"sort"
	"time"
)

// ImportCommit is one commit for Import: files to write (path → content)
// and paths to delete, on top of the commit before it.
type ImportCommit struct {
	Message string
	Write   map[string]string
	Delete  []string
}

// Import appends commits to Branch of the bare repository in one run of
// git fast-import (thousands of files and hundreds of commits in about a
// second), then moves the working clone to the new head. It returns the
// SHA of the last commit.
func (r *Repo) Import(commits []ImportCommit) string {
	r.t.Helper()
	parent, err := r.runErr(r.Bare, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+r.Branch)
	if err != nil {
		parent = "" // an empty repository: the first commit has no parent
	}
	var b bytes.Buffer
	when := time.Now().Unix() - int64(len(commits))
	for i, c := range commits {
		fmt.Fprintf(&b, "commit refs/heads/%s\n", r.Branch)
		fmt.Fprintf(&b, "author %s <%s> %d +0000\n", AuthorName, AuthorEmail, when+int64(i))
		fmt.Fprintf(&b, "committer %s <%s> %d +0000\n", AuthorName, AuthorEmail, when+int64(i))
		fmt.Fprintf(&b, "data %d\n%s\n", len(c.Message), c.Message)
		if i == 0 && parent != "" {
			fmt.Fprintf(&b, "from %s\n", parent)
		}
		for _, p := range c.Delete {
			fmt.Fprintf(&b, "D %s\n", p)
		}
		paths := make([]string, 0, len(c.Write))
		for p := range c.Write {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", p, len(c.Write[p]), c.Write[p])
		}
		b.WriteString("\n")
	}
	if _, err := r.runErr(r.Bare, b.Bytes(), "fast-import", "--quiet", "--force"); err != nil {
		r.t.Fatalf("gittest: %v", err)
	}
	r.Git("fetch", "--quiet", "origin", r.Branch)
	r.Git("reset", "--quiet", "--hard", "FETCH_HEAD")
	return r.Head()
}
