// Package buildctx turns a container's build (manifest.Build) into what
// the engine builds: it reads the build context from a folder of the
// source at its revision (.dockerignore honoured with moby/patternmatcher),
// checks the Dockerfile with buildkit's parser, names the image after the
// digest of every input (BuildRepository/<pod>-<container>:<digest>), and
// writes the context as the tar stream the engine's build endpoint reads.
// It is pure: the same source revision gives the same image name on any
// machine, so `hostlet diff` sees a build coming without building.
package buildctx
