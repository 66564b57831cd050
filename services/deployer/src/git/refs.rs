//! Ref rules, the ones of `git check-ref-format` plus "not an option": a ref reaches git as an
//! argument (after `--end-of-options` as well, belt and braces).

use super::GitError;

fn bad(git_ref: &str, reason: &str) -> GitError {
    GitError::InvalidRef { git_ref: git_ref.to_owned(), reason: reason.to_owned() }
}

/// A branch, tag, full ref (`refs/heads/main`) or commit id.
pub fn check_ref(git_ref: &str) -> Result<(), GitError> {
    if git_ref.is_empty() {
        return Err(bad(git_ref, "is required"));
    }
    if git_ref.len() > 255 {
        return Err(bad(git_ref, "is longer than 255 characters"));
    }
    if git_ref.starts_with('-') {
        return Err(bad(git_ref, "must not start with `-`"));
    }
    if git_ref == "@" {
        return Err(bad(git_ref, "`@` alone is not a ref"));
    }
    if git_ref.chars().any(|c| c.is_control() || " ~^:?*[\\".contains(c)) {
        return Err(bad(
            git_ref,
            "must not contain spaces, control characters or any of ~ ^ : ? * [ \\",
        ));
    }
    if git_ref.contains("..") || git_ref.contains("@{") || git_ref.contains("//") {
        return Err(bad(git_ref, "must not contain `..`, `@{` or `//`"));
    }
    if git_ref.starts_with('/') || git_ref.ends_with('/') || git_ref.ends_with('.') {
        return Err(bad(git_ref, "must not start or end with `/`, or end with `.`"));
    }
    for component in git_ref.split('/') {
        if component.starts_with('.') || component.ends_with(".lock") {
            return Err(bad(git_ref, "no component may start with `.` or end with `.lock`"));
        }
    }
    Ok(())
}

/// A full or abbreviated commit id (7 to 40 hex digits, or 64 for SHA-256 repos).
pub fn looks_like_commit(git_ref: &str) -> bool {
    (7..=64).contains(&git_ref.len()) && git_ref.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_branches_tags_and_commits() {
        for ok in ["main", "v1.2.3", "release/2026-11", "refs/tags/v1", "0123abc", "feature_x"] {
            check_ref(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        assert!(looks_like_commit("0123abc"));
        assert!(!looks_like_commit("main"));
    }

    #[test]
    fn refuses_what_git_refuses_and_options() {
        for (bad_ref, needle) in [
            ("--upload-pack=x", "`-`"),
            ("a..b", "`..`"),
            ("HEAD@{1}", "`@{`"),
            ("has space", "spaces"),
            ("x~1", "~"),
            ("a/.hidden", "start with `.`"),
            ("topic.lock", ".lock"),
            ("trailing/", "`/`"),
            ("", "required"),
        ] {
            let err = check_ref(bad_ref).unwrap_err().to_string();
            assert!(err.contains(needle), "{bad_ref}: {err}");
        }
    }
}
