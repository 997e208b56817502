// Package imageupdate finds the images that carry an update policy in a
// source's files (native manifests' imagePolicy, Compose services'
// x-hostlet-image-policy), asks the registries for their tags, decides
// each image's next tag (imagepolicy) and edits the files in place,
// keeping everything around the tag as it was written: comments,
// quoting, key order, tag precision and variant suffixes. A tag held in
// a variable (`repo/web:${WEB_TAG}`) is moved where the variable is set:
// the project's .env line, or the expression's default.
package imageupdate
