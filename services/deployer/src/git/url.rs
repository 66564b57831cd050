//! Repo URL rules. A URL reaches `git` as an argument, so anything git could read as an option
//! or as a command-running transport (`ext::`, `fd::`) is refused, as are credentials in the
//! URL (tokens travel only through the askpass helper) and `..` path segments.

use std::path::{Component, Path};

use super::GitError;

/// The transports a repo URL may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Https,
    /// Plain HTTP: local mode only, loopback hosts only (a test or LAN mirror on this machine).
    Http,
    Ssh,
    /// `file://` or a bare absolute path: local mode only.
    File,
}

impl Transport {
    /// Whether a token can be offered (over the askpass helper) on this transport.
    pub fn takes_token(self) -> bool {
        matches!(self, Self::Https | Self::Http)
    }
}

const FORMS: &str = "use https://host/path, ssh://host/path or user@host:path (and in local mode a file:// URL or an absolute path)";

fn bad(url: &str, reason: impl Into<String>) -> GitError {
    GitError::InvalidUrl { url: redact_userinfo(url), reason: reason.into() }
}

/// Checks `url` and says which transport it uses.
pub fn check_repo_url(url: &str, local_mode: bool) -> Result<Transport, GitError> {
    if url.is_empty() {
        return Err(bad(url, "is required"));
    }
    if url.len() > 2048 {
        return Err(bad(url, "is longer than 2048 characters"));
    }
    if url.starts_with('-') {
        return Err(bad(url, "must not start with `-` (git would read it as an option)"));
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(bad(url, "must not contain spaces or control characters"));
    }
    if url.contains("::") {
        return Err(bad(
            url,
            "remote-helper transports (`<helper>::...`, e.g. `ext::`) are not allowed",
        ));
    }
    let transport = if let Some(rest) = url.strip_prefix("https://") {
        check_remote(url, rest, true)?;
        Transport::Https
    } else if let Some(rest) = url.strip_prefix("http://") {
        if !local_mode {
            return Err(bad(url, "plain http:// is refused; use https://"));
        }
        let host = check_remote(url, rest, true)?;
        if !is_loopback(&host) {
            return Err(bad(
                url,
                "plain http:// is allowed only for a loopback host in local mode",
            ));
        }
        Transport::Http
    } else if let Some(rest) = url.strip_prefix("ssh://") {
        check_remote(url, rest, false)?;
        Transport::Ssh
    } else if let Some(path) = url.strip_prefix("file://") {
        check_local(url, path, local_mode)?;
        Transport::File
    } else if url.starts_with('/') {
        check_local(url, url, local_mode)?;
        Transport::File
    } else if let Some((scheme, _)) = url.split_once("://") {
        return Err(bad(url, format!("scheme `{scheme}://` is not allowed: {FORMS}")));
    } else if let Some((user_host, path)) = scp_like(url) {
        check_segments(url, path)?;
        if user_host.is_empty() || path.is_empty() {
            return Err(bad(url, "ssh form is `user@host:path`"));
        }
        Transport::Ssh
    } else {
        return Err(bad(url, FORMS));
    };
    Ok(transport)
}

/// `host[:port]/path` after the scheme; returns the host.
fn check_remote(url: &str, rest: &str, refuse_userinfo: bool) -> Result<String, GitError> {
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    if authority.contains('@') && refuse_userinfo {
        return Err(bad(
            url,
            "must not carry credentials; store a GITHUB_TOKEN secret on the group (or use the GitHub App) instead",
        ));
    }
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, rest)) => (host, rest.strip_prefix(':')),
            None => (v6, None),
        },
        None => match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    if host.is_empty() || host.starts_with('-') {
        return Err(bad(url, "has no host"));
    }
    // A `user:secret/...@host` typed by hand reads as host `user`, port `secret`: refused here
    // rather than stored.
    if let Some(port) = port
        && port.parse::<u16>().map_or(true, |p| p == 0)
    {
        return Err(bad(url, "has a port that is not a number from 1 to 65535"));
    }
    if path.is_empty() {
        return Err(bad(url, "has no repository path"));
    }
    check_segments(url, path)?;
    Ok(host.to_owned())
}

fn check_local(url: &str, path: &str, local_mode: bool) -> Result<(), GitError> {
    if !local_mode {
        return Err(bad(url, "local repositories are allowed only in local mode"));
    }
    let path = Path::new(path);
    if !path.is_absolute() {
        return Err(bad(url, "a local repository needs an absolute path"));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(bad(url, "must not contain `..`"));
    }
    Ok(())
}

fn check_segments(url: &str, path: &str) -> Result<(), GitError> {
    if path.split('/').any(|segment| segment == "..") {
        return Err(bad(url, "must not contain `..` path segments"));
    }
    if path.starts_with('-') {
        return Err(bad(url, "path must not start with `-`"));
    }
    Ok(())
}

/// `user@host:path` (git's scp-like ssh syntax): a `:` before any `/`.
fn scp_like(url: &str) -> Option<(&str, &str)> {
    let colon = url.find(':')?;
    if url[..colon].contains('/') {
        return None;
    }
    Some((&url[..colon], &url[colon + 1..]))
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The URL with any `user:password@` replaced, for messages.
///
/// Credentials end at the authority's last `@`; a password holding a `/` (which ends the
/// authority) is still found: a `user:…@` anywhere after the scheme is redacted as a whole, since
/// showing a mangled host is better than showing part of a secret.
pub fn redact_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
    let at = match authority.rfind('@') {
        Some(at) => at,
        None => match rest.rfind('@') {
            Some(at) if rest[..at].contains(':') => at,
            _ => return url.to_owned(),
        },
    };
    format!("{scheme}://<redacted>@{}", &rest[at + 1..])
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;
    use crate::git::refs::check_ref;

    proptest! {
        /// Any URL: no panic; what is accepted can never reach git as an option or a
        /// command-running transport.
        #[test]
        fn any_url_is_judged(url in any::<String>(), local in any::<bool>()) {
            if check_repo_url(&url, local).is_ok() {
                prop_assert!(!url.starts_with('-') && !url.contains("::"), "{url:?}");
                prop_assert!(!url.chars().any(|c| c.is_control() || c.is_whitespace()), "{url:?}");
                prop_assert!(!url.split('/').any(|s| s == ".."), "{url:?}");
            }
        }

        /// A password in a URL never shows in a message about it, whatever it holds.
        #[test]
        fn passwords_never_show(user in "[a-z]{1,8}", password in "[A-Za-z0-9/:._~%+-]{12,24}", path in "[a-z/]{1,16}") {
            let url = format!("https://{user}:{password}@github.com/{path}");
            if let Err(err) = check_repo_url(&url, false) {
                prop_assert!(!err.to_string().contains(&password), "{err}");
            }
            prop_assert!(!redact_userinfo(&url).contains(&password));
        }

        /// Any ref: no panic; an accepted one is not an option, a revision expression or a
        /// path trick.
        #[test]
        fn any_ref_is_judged(git_ref in any::<String>()) {
            match check_ref(&git_ref) {
                Ok(()) => {
                    prop_assert!(!git_ref.starts_with('-') && !git_ref.contains("..") && !git_ref.contains("@{"), "{git_ref:?}");
                    prop_assert!(!git_ref.chars().any(|c| c.is_control() || " ~^:?*[\\".contains(c)), "{git_ref:?}");
                }
                Err(err) => prop_assert!(!err.to_string().is_empty()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_allowed_forms() {
        assert_eq!(
            check_repo_url("https://github.com/acme/tools.git", false).unwrap(),
            Transport::Https
        );
        assert_eq!(
            check_repo_url("ssh://git@github.com/acme/tools", false).unwrap(),
            Transport::Ssh
        );
        assert_eq!(check_repo_url("git@github.com:acme/tools.git", false).unwrap(), Transport::Ssh);
        assert_eq!(check_repo_url("/srv/repos/tools", true).unwrap(), Transport::File);
        assert_eq!(check_repo_url("file:///srv/repos/tools", true).unwrap(), Transport::File);
        assert_eq!(
            check_repo_url("http://127.0.0.1:9000/tools.git", true).unwrap(),
            Transport::Http
        );
    }

    #[test]
    fn refuses_injection_escapes_and_credentials() {
        let refused = [
            ("--upload-pack=touch /tmp/x", true, "`-`"),
            ("ext::sh -c touch% /tmp/pwned", true, "spaces"),
            ("ext::sh", true, "remote-helper"),
            ("https://user:ghp_secret@github.com/a/b", true, "credentials"),
            ("https://github.com/a/../../etc", true, "`..`"),
            ("file:///srv/../etc/passwd", true, "`..`"),
            ("/srv/repo", false, "local mode"),
            ("relative/path", true, "use https://"),
            ("ftp://example.com/a.git", true, "`ftp://` is not allowed"),
            ("http://example.com/a.git", true, "loopback"),
            ("http://127.0.0.1/a.git", false, "https://"),
            ("https://-oProxyCommand=x/a", true, "no host"),
            ("", true, "required"),
        ];
        for (url, local, needle) in refused {
            let err = check_repo_url(url, local).unwrap_err().to_string();
            assert!(err.contains(needle), "{url}: {err}");
            assert!(!err.contains("ghp_secret"), "{err}");
        }
    }
}
