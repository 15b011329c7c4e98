package otlp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Line is one decoded line of a file.
type Line struct {
	Number int
	Batch  Batch
}

// ReadFile decodes every non-empty line of path.
func ReadFile(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}

// Read decodes JSON lines; a line can be megabytes (a whole build), so it
// is read without bufio.Scanner's token limit.
func Read(r io.Reader) ([]Line, error) {
	br := bufio.NewReader(r)
	var out []Line
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			var b Batch
			if jsonErr := json.Unmarshal(raw, &b); jsonErr != nil {
				return nil, fmt.Errorf("line %d: %w", n, jsonErr)
			}
			out = append(out, Line{Number: n, Batch: b})
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
