package history

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

type blobs map[string][]byte

func (b blobs) GetBlob(_ context.Context, name string) ([]byte, error) { return b[name], nil }
func (b blobs) PutBlob(_ context.Context, name string, v []byte) error {
	b[name] = v
	return nil
}

// A history the previous receiver saved (CTHIST2, keyed by ct.target): one
// warning that says why, an empty history, no crash; the next save writes
// the new format over it.
func TestAnOldHistoryIsDroppedWithOneWarning(t *testing.T) {
	old := []byte("CTHIST2\n\x01\x00\x00\x00\x03\x00\x00\x00h\x00v\x01\x00\x00\x00\x00\x00\x00\x00" +
		"\x00\x00\x00\x00\x03\x00\x00\x00a.o\x00")
	store := blobs{historyBlob: old}
	core, logs := observer.New(zapcore.InfoLevel)
	h, err := Open(context.Background(), Options{MaxTargets: 10, MedianOf: 5}, store, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	warnings := logs.FilterLevelExact(zapcore.WarnLevel).All()
	if len(warnings) != 1 {
		t.Fatalf("want one warning, got %v", logs.All())
	}
	if msg := warnings[0].ContextMap()["error"]; !strings.Contains(msg.(string), "older receiver") {
		t.Errorf("warning does not say why: %v", warnings[0].ContextMap())
	}
	if f := h.footprint(); f.Targets != 0 {
		t.Errorf("%d targets restored from an old history", f.Targets)
	}
	h.save(context.Background())
	if !strings.HasPrefix(string(store[historyBlob]), "CTHIST4\n") {
		t.Errorf("saved %q", store[historyBlob][:8])
	}
}

// A history of the receiver before the PCH manifests (CTHIST3): converted,
// its targets kept, with one warning that says so; the next save writes
// CTHIST4.
func TestACTHIST3HistoryIsConvertedWithOneWarning(t *testing.T) {
	// One scope "h\0v", one target "a.cpp" with one compile and no key, no builds.
	v3 := []byte("CTHIST3\n\x01\x00\x00\x00\x03\x00\x00\x00h\x00v\x01\x00\x00\x00\x00\x00\x00\x00" +
		"\x00\x00\x00\x00\x05\x00\x00\x00a.cpp\x01" +
		"\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00" +
		"\x00\x00\x00\x00\x00")
	store := blobs{historyBlob: v3}
	core, logs := observer.New(zapcore.InfoLevel)
	h, err := Open(context.Background(), Options{MaxTargets: 10, MedianOf: 5}, store, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	warnings := logs.FilterLevelExact(zapcore.WarnLevel).All()
	if len(warnings) != 1 {
		t.Fatalf("want one warning, got %v", logs.All())
	}
	if msg, _ := warnings[0].ContextMap()["conversion"].(string); !strings.Contains(msg, "converted") {
		t.Errorf("warning does not say what happened: %v", warnings[0].ContextMap())
	}
	if f := h.footprint(); f.Targets != 1 || f.Compiles != 1 {
		t.Errorf("converted history lost its target: %+v", f)
	}
	h.save(context.Background())
	if !strings.HasPrefix(string(store[historyBlob]), "CTHIST4\n") {
		t.Errorf("saved %q", store[historyBlob][:8])
	}
}
