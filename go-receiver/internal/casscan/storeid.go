package casscan

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// StoreIDFileName holds a store's identity in the store's directory, the
// same on every host that mounts it whatever the mount path. A receiver
// with `scan: elect` writes it once (it writes the lease there anyway);
// every receiver reads it.
const StoreIDFileName = ".ct-otel-store-id"

// validStoreID is what a store id may be: configured or read from a
// store's id file. Short, printable, no spaces, so it is a safe label
// value everywhere.
var validStoreID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)

// ValidStoreID reports whether id can be a store id.
func ValidStoreID(id string) bool { return validStoreID.MatchString(id) }

// storeIDSource says where a store's id came from.
type storeIDSource int

const (
	idConfigured storeIDSource = iota // the store's `id`
	idFile                            // the store's id file
	idNone                            // none known: no ct.cas.store.id
)

// readStoreID reads the id file of dir: os.ErrNotExist when there is
// none, errHostile when it is not one a receiver wrote.
func readStoreID(dir string) (string, error) {
	data, err := readSmallFile(filepath.Join(dir, StoreIDFileName))
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(data))
	if !ValidStoreID(id) {
		return "", fmt.Errorf("%w: not a store id", errHostile)
	}
	return id, nil
}

// createStoreID writes a random id into dir unless one is there, and
// returns the id the file holds afterwards: the first writer's, on every
// host.
func createStoreID(dir, holder string) (string, error) {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand, Go 1.24+)
	err := publishExclusive(filepath.Join(dir, StoreIDFileName), holder, []byte(hex.EncodeToString(raw[:])+"\n"))
	if err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return readStoreID(dir)
}
