package secrets_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/sopstest"
	"github.com/hostlet/hostlet/manifest/sopsfile"
	"github.com/hostlet/hostlet/secrets"
)

// BenchmarkDecrypt100Files decrypts 100 dotenv files of 20 values each
// (about 2 KiB of plaintext, 5 KiB encrypted) through the real helper:
// cold, a new decrypter each time (one run of the helper for all 100),
// and warm, from the cache (what every later sync and re-read pays).
func BenchmarkDecrypt100Files(b *testing.B) {
	helper := sopstest.Helper(b)
	key := sopstest.NewKey(b)
	keys, err := secrets.LoadKeys(key.File, "")
	if err != nil {
		b.Fatal(err)
	}
	files := make([]secrets.File, 100)
	for i := range files {
		var plain []byte
		for j := range 20 {
			plain = fmt.Appendf(plain, "VALUE_%02d=%040d\n", j, i*100+j)
		}
		name := fmt.Sprintf("f%03d.env", i)
		data := sopstest.Encrypt(b, name, plain, []string{key.Recipient})
		info, _, _ := sopsfile.Detect(name, data)
		files[i] = secrets.File{Name: "bench:" + name, Format: info.Format, Data: data}
	}
	decrypt := func(b *testing.B, d *secrets.Decrypter) {
		_, errs := d.Decrypt(context.Background(), files)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			decrypt(b, secrets.NewDecrypter(helper, keys))
		}
	})
	b.Run("warm", func(b *testing.B) {
		d := secrets.NewDecrypter(helper, keys)
		decrypt(b, d)
		for b.Loop() {
			decrypt(b, d)
		}
	})
}
