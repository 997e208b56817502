// Package sopsfile recognises SOPS-encrypted files by their content, as
// hostlet reads every file of a source (docs/secrets.md): a YAML or JSON
// file with a top-level sops mapping, a dotenv file with sops_ lines, an
// INI file with a [sops] section, or sops's binary form (JSON holding
// data and sops). It reads the metadata (the MAC's presence, the age
// recipients, the other kinds of key) without any key, in one pass over
// the whole file, and never decrypts: decryption is the hostlet-sops
// helper's.
package sopsfile
