//! One attempt against real git: a bare repository as the remote, a member's clone
//! pushing its branch, and the attempt in an empty directory of its own.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

pub(crate) struct Repo {
    pub(crate) root: PathBuf,
    pub(crate) url: String,
}

pub(crate) fn sh(dir: &Path, script: &str) -> String {
    let output = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "member")
        .env("GIT_AUTHOR_EMAIL", "member@example.com")
        .env("GIT_COMMITTER_NAME", "member")
        .env("GIT_COMMITTER_EMAIL", "member@example.com")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

impl Repo {
    /// A remote whose `main` holds `a.txt` and `b.txt`, five lines each.
    pub(crate) fn new(test: &str) -> Repo {
        let root =
            std::env::temp_dir().join(format!("overseer-land-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        sh(&root, "git init --quiet --bare -b main origin.git");
        let url = format!("file://{}/origin.git", root.display());
        sh(
            &root,
            &format!(
                "git clone --quiet {url} seed && cd seed && git checkout --quiet -b main && \
                 printf '1\\n2\\n3\\n4\\n5\\n' > a.txt && cp a.txt b.txt && git add . && \
                 git commit --quiet -m seed && git push --quiet origin main"
            ),
        );
        Repo { root, url }
    }

    /// A member's clone of `main` on `branch`, with `edit` committed and pushed; the sha.
    fn push(&self, member: &str, branch: &str, edit: &str) -> String {
        let dir = self.root.join(member);
        if !dir.exists() {
            sh(
                &self.root,
                &format!("git clone --quiet {} {member}", self.url),
            );
            sh(&dir, &format!("git checkout --quiet -b {branch}"));
        }
        sh(
            &dir,
            &format!(
                "{edit} && git commit --quiet -am '{member}' && git push --quiet origin {branch}"
            ),
        );
        sh(&dir, "git rev-parse HEAD")
    }

    fn job(&self, branch: &str, sha: &str, checks: Vec<MergeCheck>) -> Job {
        Job {
            url: self.url.clone(),
            target: "main".into(),
            branch: branch.into(),
            sha: sha.into(),
            checks,
        }
    }

    /// One attempt in a directory of its own, as a pod's.
    fn land(&self, attempt: &str, job: &Job) -> Landing {
        let dir = self.root.join(attempt);
        std::fs::create_dir_all(&dir).unwrap();
        land(&dir, job)
    }

    pub(crate) fn main(&self) -> String {
        sh(&self.root, "git --git-dir=origin.git rev-parse main")
    }

    pub(crate) fn main_file(&self, file: &str) -> String {
        sh(
            &self.root,
            &format!("git --git-dir=origin.git show main:{file}"),
        )
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub(crate) fn check(name: &str, script: &str) -> MergeCheck {
    MergeCheck {
        name: name.into(),
        command: vec!["sh".into(), "-c".into(), script.into()],
    }
}

#[test]
fn two_disjoint_edits_both_land_in_order_and_a_landed_commit_is_not_pushed_again() {
    let repo = Repo::new("disjoint");
    let a = repo.push("alice", "overseer/a", "sed -i 's/^1$/one/' a.txt");
    let b = repo.push("bob", "overseer/b", "sed -i 's/^5$/five/' b.txt");
    let first = repo.land(
        "attempt-1",
        &repo.job("overseer/a", &a, vec![check("lint", "test -f a.txt")]),
    );
    assert_eq!(first, Landing::Merged { sha: repo.main() });
    let second = repo.land("attempt-2", &repo.job("overseer/b", &b, vec![]));
    assert_eq!(second, Landing::Merged { sha: repo.main() });
    assert!(repo.main_file("a.txt").starts_with("one"));
    assert!(repo.main_file("b.txt").ends_with("five"));
    let log = sh(&repo.root, "git --git-dir=origin.git log --format=%s main");
    assert!(log.starts_with("Merge overseer/b"), "{log}");
    // An attempt after a stop that followed the push: merged, no second push.
    let landed = repo.main();
    let again = repo.land("attempt-3", &repo.job("overseer/b", &b, vec![]));
    assert_eq!(
        again,
        Landing::AlreadyMerged {
            sha: landed.clone()
        }
    );
    assert_eq!(repo.main(), landed);
}

#[test]
fn overlapping_edits_conflict_with_their_paths_and_merge_once_the_author_rebases() {
    let repo = Repo::new("conflict");
    let a = repo.push("alice", "overseer/a", "sed -i 's/^3$/three/' a.txt");
    let b = repo.push(
        "bob",
        "overseer/b",
        "sed -i 's/^3$/THREE/' a.txt && sed -i 's/^1$/uno/' b.txt",
    );
    assert!(matches!(
        repo.land("attempt-1", &repo.job("overseer/a", &a, vec![])),
        Landing::Merged { .. }
    ));
    let before = repo.main();
    let conflict = repo.land("attempt-2", &repo.job("overseer/b", &b, vec![]));
    assert_eq!(
        conflict,
        Landing::Conflict {
            paths: vec!["a.txt".into()]
        }
    );
    assert_eq!(repo.main(), before, "nothing landed");
    // The author merges the target in, keeps both words, and pushes again.
    let bob = repo.root.join("bob");
    sh(
        &bob,
        "git fetch --quiet origin main && (git merge --quiet origin/main || true) && \
              printf '1\\n2\\nthree THREE\\n4\\n5\\n' > a.txt && git add a.txt && git commit --quiet -m rebased && \
              git push --quiet origin overseer/b",
    );
    let rebased = sh(&bob, "git rev-parse HEAD");
    let merged = repo.land("attempt-3", &repo.job("overseer/b", &rebased, vec![]));
    assert!(matches!(merged, Landing::Merged { .. }), "{merged:?}");
    assert!(repo.main_file("a.txt").contains("three THREE"));
    assert!(repo.main_file("b.txt").starts_with("uno"));
}

#[test]
fn a_failing_check_leaves_the_target_unchanged_and_reports_its_outputs_tail() {
    let repo = Repo::new("check");
    let a = repo.push("alice", "overseer/a", "sed -i 's/^1$/one/' a.txt");
    let before = repo.main();
    let checks = vec![
        check("build", "true"),
        check(
            "test",
            "seq 1 2000 | sed 's/^/line /'; echo 'test failed: a.txt' >&2; exit 3",
        ),
        check("never", "touch never-ran"),
    ];
    let failed = repo.land("attempt-1", &repo.job("overseer/a", &a, checks));
    let Landing::ChecksFailed { check, tail } = failed else {
        panic!("{failed:?}");
    };
    assert_eq!(check, "test");
    assert!(
        tail.len() <= TAIL_BYTES && tail.ends_with("test failed: a.txt\n"),
        "{tail}"
    );
    assert!(!tail.contains("line 1\n"), "only the tail");
    assert_eq!(repo.main(), before);
    assert!(!repo.root.join("attempt-1/never-ran").exists());
}

#[test]
fn a_target_that_moved_during_the_checks_is_reported_and_the_next_attempt_lands() {
    let repo = Repo::new("moved");
    let a = repo.push("alice", "overseer/a", "sed -i 's/^1$/one/' a.txt");
    // A check that lands another change on main meanwhile, once.
    let other = repo.root.join("other");
    sh(&repo.root, &format!("git clone --quiet {} other", repo.url));
    let moves = format!(
        "test -e {marker} || (touch {marker} && cd {other} && sed -i 's/^5$/cinq/' b.txt && \
         git -c user.name=o -c user.email=o@x commit --quiet -am other && git push --quiet origin main)",
        marker = repo.root.join("moved-once").display(),
        other = other.display()
    );
    let job = repo.job("overseer/a", &a, vec![check("moves", &moves)]);
    assert_eq!(repo.land("attempt-1", &job), Landing::TargetMoved);
    assert!(
        repo.main_file("b.txt").ends_with("cinq"),
        "the other change is kept"
    );
    let second = repo.land("attempt-2", &job);
    assert!(matches!(second, Landing::Merged { .. }), "{second:?}");
    assert!(
        repo.main_file("a.txt").starts_with("one") && repo.main_file("b.txt").ends_with("cinq")
    );
}

#[test]
fn a_commit_not_on_the_branch_or_a_branch_not_pushed_is_refused() {
    let repo = Repo::new("refused");
    let a = repo.push("alice", "overseer/a", "sed -i 's/^1$/one/' a.txt");
    let stranger = "0123456789abcdef0123456789abcdef01234567";
    let refused = repo.land("attempt-1", &repo.job("overseer/a", stranger, vec![]));
    assert!(
        matches!(refused, Landing::NotOnBranch { .. }),
        "{refused:?}"
    );
    let missing = repo.land("attempt-2", &repo.job("overseer/none", &a, vec![]));
    assert!(
        matches!(missing, Landing::NotOnBranch { .. }),
        "{missing:?}"
    );
    assert_eq!(tail("héllo\u{1b}[2J", 6), "lo [2J");
    assert_eq!(tail("héllo", 4), "llo", "cut at a character boundary");
}
