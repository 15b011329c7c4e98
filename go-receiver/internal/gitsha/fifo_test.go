package gitsha

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO where git keeps a one-line file (HEAD, a ref, commondir, the
// `.git` file of a worktree) or packed-refs must make Head fail at once,
// not wait for a writer: Head runs on the poll goroutine.
func TestFIFOInTheRepositoryIsAnErrorNotAHang(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name string
		// want is the SHA Head still finds ("" for an error): an unreadable
		// commondir means "no shared directory", as a missing one does.
		want  string
		setUp func(t *testing.T, repo string) (fifo string)
	}{
		{"HEAD", "", func(t *testing.T, repo string) string {
			return filepath.Join(repo, ".git", "HEAD")
		}},
		{"branch ref", "", func(t *testing.T, repo string) string {
			write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
			return filepath.Join(repo, ".git", "refs", "heads", "main")
		}},
		{"packed-refs", "", func(t *testing.T, repo string) string {
			write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
			return filepath.Join(repo, ".git", "packed-refs")
		}},
		{"commondir", sha, func(t *testing.T, repo string) string {
			write(t, filepath.Join(repo, ".git", "HEAD"), sha+"\n")
			return filepath.Join(repo, ".git", "commondir")
		}},
		{".git file", "", func(t *testing.T, repo string) string {
			return filepath.Join(repo, ".git")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := t.TempDir()
			if c.name != ".git file" {
				if err := os.MkdirAll(filepath.Join(repo, ".git", "refs", "heads"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			fifo := c.setUp(t, repo)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			type result struct {
				sha string
				err error
			}
			done := make(chan result, 1)
			go func() {
				got, err := Head(repo)
				done <- result{got, err}
			}()
			select {
			case r := <-done:
				if r.sha != c.want || (c.want == "") != (r.err != nil) {
					t.Errorf("got %q, %v; want %q", r.sha, r.err, c.want)
				}
			case <-time.After(2 * time.Second):
				if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				<-done
				t.Fatalf("Head blocked on the FIFO at %s", fifo)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
