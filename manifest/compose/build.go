package compose

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
	"github.com/hostlet/hostlet/manifest/project"
)

// buildKeys name a build's fields by the service's build keys.
var buildKeys = map[string]string{
	"context": "context", "dockerfile": "dockerfile", "dockerfileInline": "dockerfile_inline", "args": "args",
	"target": "target", "labels": "labels", "network": "network", "extraHosts": "extra_hosts",
}

// build maps the service's build: onto the container's, resolved from the
// project's files: the context is a folder of the project, read as it is
// at the source's revision (.dockerignore honoured), and the image is
// named after the inputs' digest. Every replica of the service shares
// that image: its name is the service's first pod's.
func (c *serviceConv) build(ct *manifest.Container, s types.ServiceConfig) {
	if s.Build == nil {
		if s.PullPolicy == types.PullPolicyBuild {
			c.add("pull_policy", "build: needs a build: section")
		}
		return
	}
	c.key("containers[0].build", "build")
	for f, k := range buildKeys {
		c.key("containers[0].build."+f, "build."+k)
	}
	bc := s.Build
	b := &manifest.Build{
		Dockerfile:       bc.Dockerfile,
		DockerfileInline: bc.DockerfileInline,
		Target:           bc.Target,
		Network:          bc.Network,
		NoCache:          bc.NoCache,
		Pull:             bc.Pull,
	}
	if b.DockerfileInline != "" && b.Dockerfile == buildctx.DefaultDockerfile {
		// compose-go fills in the default name beside an inline one.
		b.Dockerfile = ""
	}
	for _, k := range slices.Sorted(maps.Keys(bc.Args)) {
		v := bc.Args[k]
		if v == nil {
			// "args: [NAME]": the value of the environment, if any.
			val, ok := c.t.env[k]
			if !ok {
				continue
			}
			v = &val
		}
		if b.Args == nil {
			b.Args = map[string]string{}
		}
		b.Args[k] = *v
	}
	if len(bc.Labels) > 0 {
		b.Labels = maps.Clone(map[string]string(bc.Labels))
	}
	for _, host := range slices.Sorted(maps.Keys(bc.ExtraHosts)) {
		for _, ip := range bc.ExtraHosts[host] {
			b.ExtraHosts = append(b.ExtraHosts, host+":"+ip)
		}
	}
	ctxPath, err := c.contextPath(bc.Context)
	if err != nil {
		c.add("build.context", "%s", err)
		return
	}
	b.Context = ctxPath
	ct.Build = b
	folder := buildctx.NewListFolder(c.t.files.Names(), ctxPath, c.t.files.ReadFile, c.t.files.Executable)
	owner := PodID(c.t.project.Name, c.name, 0)
	if err := buildctx.Resolve(owner, ct, ctxPath, folder); err != nil {
		var fe *buildctx.FieldError
		if !errors.As(err, &fe) {
			c.add("build", "%v", err)
			return
		}
		key := "build." + fe.Field
		if k, ok := buildKeys[fe.Field]; ok {
			key = "build." + k
		}
		c.add(key, "%s", fe.Detail)
		return
	}
	// The context travels with every pod of the service (replicas
	// counted), within the project's bound with its files volumes.
	size := ct.Build.Files.Size() * c.replicas
	if c.t.fileBytes+size > project.MaxBytes {
		c.add("build.context", "%s: the project's pods would carry more than %d bytes of files and build contexts (a context counts for every replica)", ctxPath, project.MaxBytes)
		ct.Build = b
		return
	}
	c.t.fileBytes += size
}

// contextPath is a build context as a folder of the project.
func (c *serviceConv) contextPath(ctx string) (string, error) {
	if ctx == "" {
		ctx = "."
	}
	if strings.Contains(ctx, "://") || strings.HasPrefix(ctx, "git@") {
		return "", errors.New(ctx + ": a remote context is not built; the context is a folder of the project")
	}
	if homePath(ctx) {
		return "", errors.New(ctx + ": the context is a folder of the project, not of a home folder")
	}
	if _, body := c.t.files.(noFiles); body {
		return "", errors.New(ctx + ": a project delivered as one body has no files to build: keep it in a file or git source")
	}
	p, err := projectPath(c.t.rel(ctx))
	if err != nil {
		return "", errors.New(ctx + ": " + err.Error())
	}
	return p, nil
}
