package gitlog_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/services/indexer"
	"github.com/prsaga/prsaga/services/indexer/gitlog"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

// history is main: base1 - base2 - base3, a feature branch forked at base1
// with feat1, feat2, then three ways to land it: a merge commit (parents
// base3, feat2), a squash commit on base3, and feat2 itself (fast-forward
// from base1's point of view).
func history() []gittest.Commit {
	return []gittest.Commit{
		{Name: "base1", Branch: "main", Message: "Initial layout", At: at(0), Files: map[string]string{"README.md": "r"}},
		{Name: "base2", Branch: "main", Parents: []string{"base1"}, Message: "Tune the build", At: at(10)},
		{Name: "feat1", Branch: "feature/token", Parents: []string{"base1"}, Message: "Handle expired tokens", At: at(20)},
		{Name: "base3", Branch: "main", Parents: []string{"base2"}, Message: "Bump dependencies", At: at(30)},
		{Name: "feat2", Branch: "feature/token", Parents: []string{"feat1"}, Message: "Test the token refresh\n\nWith a body.", At: at(40)},
		{Name: "merge", Branch: "main", Parents: []string{"base3", "feat2"}, Message: "Merge pull request #42 from feature/token\n\nPrsaga-PR: acme/widgets#42", At: at(50)},
		{Name: "squash", Branch: "squashed", Parents: []string{"base3"}, Message: "Fix the token refresh (#42)", At: at(60)},
	}
}

func newReader(t *testing.T, root string) *gitlog.Reader {
	t.Helper()
	r, err := gitlog.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMerged(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewBare(t, root, "acme/widgets", history()...)
	r := newReader(t, root)
	for _, tc := range []struct {
		name, tip, base string
		want            []string // messages, newest first
	}{
		{"merge commit: the merge and the branch's commits", "merge", "",
			[]string{"Merge pull request #42 from feature/token\n\nPrsaga-PR: acme/widgets#42", "Test the token refresh\n\nWith a body.", "Handle expired tokens"}},
		{"squash: the one commit", "squash", "", []string{"Fix the token refresh (#42)"}},
		{"fast-forward without a base: the head commit only", "feat2", "", []string{"Test the token refresh\n\nWith a body."}},
		{"fast-forward with its base", "feat2", "base1", []string{"Test the token refresh\n\nWith a body.", "Handle expired tokens"}},
		{"a root commit", "base1", "", []string{"Initial layout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := ""
			if tc.base != "" {
				base = repo.SHA[tc.base]
			}
			m, err := r.MergedSince(t.Context(), "acme/widgets", repo.SHA[tc.tip], base)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.Messages, tc.want) || m.Truncated {
				t.Errorf("messages = %q (truncated %v)\nwant %q", m.Messages, m.Truncated, tc.want)
			}
			wantAt := map[string]time.Time{"merge": at(50), "squash": at(60), "feat2": at(40), "base1": at(0)}[tc.tip]
			if !m.CommittedAt.Equal(wantAt) {
				t.Errorf("committed at %s, want %s", m.CommittedAt, wantAt)
			}
		})
	}
}

// A PR commit dated before the target's history (a skewed clock) is still
// found, and target commits dated after the merge are still excluded.
func TestMergedWithSkewedDates(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewBare(t, root, "acme/widgets",
		gittest.Commit{Name: "b1", Branch: "main", Message: "b1", At: at(0)},
		gittest.Commit{Name: "f1", Branch: "f", Parents: []string{"b1"}, Message: "f1 from the past", At: at(-100)},
		gittest.Commit{Name: "b2", Branch: "main", Parents: []string{"b1"}, Message: "b2 from the future", At: at(1000)},
		gittest.Commit{Name: "m", Branch: "main", Parents: []string{"b2", "f1"}, Message: "m", At: at(5)},
	)
	m, err := newReader(t, root).Merged(t.Context(), "acme/widgets", repo.SHA["m"])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"m", "f1 from the past"}; !slices.Equal(m.Messages, want) {
		t.Errorf("messages = %q, want %q", m.Messages, want)
	}

	// The target's head dated before its own parent x: x is reached from
	// the merge first (tip only) and from the base only later, which the
	// walk's slop must still see.
	repo = gittest.NewBare(t, root, "acme/skew",
		gittest.Commit{Name: "x", Branch: "main", Message: "x on main", At: at(5)},
		gittest.Commit{Name: "b", Branch: "main", Parents: []string{"x"}, Message: "b dated before its parent", At: at(1)},
		gittest.Commit{Name: "m", Branch: "main", Parents: []string{"b", "x"}, Message: "m", At: at(10)},
	)
	m, err = newReader(t, root).Merged(t.Context(), "acme/skew", repo.SHA["m"])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"m"}; !slices.Equal(m.Messages, want) {
		t.Errorf("messages = %q, want %q (x is in the target)", m.Messages, want)
	}
}

func TestMergedIsBounded(t *testing.T) {
	root := t.TempDir()
	commits := []gittest.Commit{{Name: "b", Branch: "main", Message: "base", At: at(0)}}
	prev := "b"
	for i := range gitlog.MaxMessages + 50 {
		name := fmt.Sprintf("f%d", i)
		commits = append(commits, gittest.Commit{Name: name, Branch: "f", Parents: []string{prev}, Message: "step " + name, At: at(i + 1)})
		prev = name
	}
	commits = append(commits,
		gittest.Commit{Name: "long", Branch: "f", Parents: []string{prev}, Message: strings.Repeat("x", 3*gitlog.MaxMessageBytes), At: at(10000)},
		gittest.Commit{Name: "m", Branch: "main", Parents: []string{"b", "long"}, Message: "merge", At: at(10001)})
	repo := gittest.NewBare(t, root, "acme/big", commits...)
	m, err := newReader(t, root).Merged(t.Context(), "acme/big", repo.SHA["m"])
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Messages) != gitlog.MaxMessages || !m.Truncated {
		t.Errorf("%d messages, truncated %v; want %d and truncated", len(m.Messages), m.Truncated, gitlog.MaxMessages)
	}
	if m.Messages[0] != "merge" || len(m.Messages[1]) != gitlog.MaxMessageBytes {
		t.Errorf("first messages %q and one of %d bytes; want the merge's, then the long one cut to %d", m.Messages[0], len(m.Messages[1]), gitlog.MaxMessageBytes)
	}
}

func TestMergedRefusals(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewBare(t, root, "acme/widgets", history()...)
	outside := t.TempDir()
	elsewhere := gittest.NewBare(t, outside, "x/y", history()...)
	if err := os.Symlink(elsewhere.Dir, filepath.Join(root, "acme", "link.git")); err != nil {
		t.Fatal(err)
	}
	r := newReader(t, root)
	sha := repo.SHA["merge"]
	for _, tc := range []struct {
		name, repo, sha string
		notFound        bool
		says            string
	}{
		{"missing repository", "acme/nothing", sha, true, "acme/nothing"},
		{"missing owner", "nobody/widgets", sha, true, "nobody/widgets"},
		{"missing commit", "acme/widgets", strings.Repeat("ab", 20), true, "abab"},
		{"dot-dot", "acme/..", sha, false, ""},
		{"traversal", "../widgets", sha, false, ""},
		{"not owner/name", "acme", sha, false, ""},
		{"symlink out of the repos dir", "acme/link", elsewhere.SHA["merge"], false, "outside"},
		{"bad sha", "acme/widgets", "HEAD", false, "merge_sha"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Merged(t.Context(), tc.repo, tc.sha)
			if err == nil {
				t.Fatal("Merged succeeded")
			}
			if errors.Is(err, indexer.ErrNotFound) != tc.notFound || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Merged = %v; want ErrNotFound %v, saying %q", err, tc.notFound, tc.says)
			}
		})
	}
	// A repos dir that does not exist yet: every repository is missing.
	_, err := newReader(t, filepath.Join(root, "none")).Merged(t.Context(), "acme/widgets", sha)
	if !errors.Is(err, indexer.ErrNotFound) {
		t.Errorf("Merged under a missing repos dir = %v, want ErrNotFound", err)
	}
}

// One Reader keeps the repository open and the commits it decoded between
// calls: what another process writes meanwhile — new commits in a new pack,
// a repack that deletes the packs it had loaded — is still read right, and
// the answers equal a fresh Reader's.
func TestMergedSeesLaterWrites(t *testing.T) {
	root := t.TempDir()
	repo := gittest.NewBare(t, root, "acme/widgets", history()...)
	r := newReader(t, root)
	first, err := r.Merged(t.Context(), "acme/widgets", repo.SHA["merge"])
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Messages) != 3 {
		t.Fatalf("messages = %q; want the merge and its two branch commits", first.Messages)
	}

	repo.Add(
		gittest.Commit{Name: "feat3", Branch: "feature/docs", Parents: []string{"base2"}, Message: "Document the refresh", At: at(70)},
		gittest.Commit{Name: "base4", Branch: "main", Parents: []string{"merge"}, Message: "Bump again", At: at(80)},
		gittest.Commit{Name: "merge2", Branch: "main", Parents: []string{"base4", "feat3"}, Message: "Merge pull request #43", At: at(90)},
	)
	want := []string{"Merge pull request #43", "Document the refresh"}
	check := func(when string, r *gitlog.Reader) {
		t.Helper()
		m, err := r.Merged(t.Context(), "acme/widgets", repo.SHA["merge2"])
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if !slices.Equal(m.Messages, want) || !m.CommittedAt.Equal(at(90)) {
			t.Errorf("%s: messages = %q at %s; want %q at %s", when, m.Messages, m.CommittedAt, want, at(90))
		}
		again, err := r.Merged(t.Context(), "acme/widgets", repo.SHA["merge"])
		if err != nil || !slices.Equal(again.Messages, first.Messages) {
			t.Errorf("%s: the first merge reads %q, %v; want %q as before", when, again.Messages, err, first.Messages)
		}
	}
	check("after new commits", r)
	repo.Repack()
	check("after a repack", r)
	check("fresh reader", newReader(t, root))

	// The merge commit is looked up in the repository every time, never
	// taken from what the reader remembers.
	if err := os.RemoveAll(repo.Dir); err != nil {
		t.Fatal(err)
	}
	gittest.NewBare(t, root, "acme/widgets", gittest.Commit{Name: "other", Branch: "main", Message: "a new repository", At: at(0)})
	if _, err := r.Merged(t.Context(), "acme/widgets", repo.SHA["merge2"]); !errors.Is(err, indexer.ErrNotFound) {
		t.Errorf("Merged of a commit the recreated repository lacks = %v; want ErrNotFound", err)
	}
}
