// Package imagetar writes a single-layer container image as a
// docker-archive tar (the format of `docker save`), which the engine's image
// load API accepts without a registry or `docker build`. hostlet uses it for
// its locally built infra image; tests use it to wrap a static binary.
package imagetar
