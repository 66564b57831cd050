//! Running `git`. A token never reaches git's argv (visible in the process list) nor a URL:
//! git asks the askpass helper, which prints it from the child's own environment. Git's
//! output is scrubbed of the token before anything logs or returns it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::GitError;

/// Credentials for one HTTPS fetch. `Debug` never shows the password.
#[derive(Clone)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("username", &self.username).finish_non_exhaustive()
    }
}

const ASKPASS: &str = "#!/bin/sh\n# Written by the ramen deployer: answers git's credential prompts from its environment.\ncase \"$1\" in\n  Username*) printf '%s\\n' \"$RAMEN_GIT_USERNAME\" ;;\n  *) printf '%s\\n' \"$RAMEN_GIT_PASSWORD\" ;;\nesac\n";

/// How git is run: the askpass helper's path, the protocols allowed and the time limit.
#[derive(Clone, Debug)]
pub struct GitRunner {
    askpass: PathBuf,
    allow_protocols: String,
    timeout: Duration,
}

impl GitRunner {
    /// Writes the askpass helper (mode 0700) under `dir`.
    pub fn new(dir: &Path, local_mode: bool, timeout: Duration) -> Result<Self, GitError> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir).map_err(|e| GitError::io("create the git cache", e))?;
        let askpass = dir.join("askpass.sh");
        std::fs::write(&askpass, ASKPASS)
            .map_err(|e| GitError::io("write the askpass helper", e))?;
        std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| GitError::io("chmod the askpass helper", e))?;
        let allow_protocols =
            if local_mode { "https:ssh:file:http" } else { "https:ssh" }.to_owned();
        Ok(Self { askpass, allow_protocols, timeout })
    }

    /// Runs `git <args>` in `cwd`; stdout on success. `creds` only through the environment.
    pub async fn run(
        &self,
        cwd: &Path,
        args: &[&str],
        creds: Option<&Credentials>,
    ) -> Result<Vec<u8>, GitError> {
        self.run_limited(cwd, args, creds, u64::MAX).await
    }

    /// [`run`](Self::run) keeping at most `limit` bytes of stdout: git is killed, and the
    /// answer is [`GitError::TooLarge`], as soon as it writes more.
    pub async fn run_limited(
        &self,
        cwd: &Path,
        args: &[&str],
        creds: Option<&Credentials>,
        limit: u64,
    ) -> Result<Vec<u8>, GitError> {
        let mut command = self.command(cwd, args, creds);
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let secret = creds.map(|c| c.password.as_str());
        let what = args.first().copied().unwrap_or("git").to_owned();
        let mut child = command.spawn().map_err(|e| GitError::io("start git", e))?;
        let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let finished = async {
            let read_out = async {
                if let Some(stdout) = stdout.as_mut() {
                    stdout.take(limit.saturating_add(1)).read_to_end(&mut out).await?;
                }
                if out.len() as u64 > limit {
                    // Its stderr closes with it, which ends the other read.
                    child.start_kill()?;
                }
                Ok::<_, std::io::Error>(())
            };
            let read_err = async {
                match stderr.as_mut() {
                    Some(stderr) => stderr.read_to_end(&mut err).await.map(drop),
                    None => Ok(()),
                }
            };
            let (read_out, read_err) = tokio::join!(read_out, read_err);
            read_out.and(read_err)?;
            child.wait().await
        };
        let status = match tokio::time::timeout(self.timeout, finished).await {
            Ok(status) => status.map_err(|e| GitError::io("run git", e))?,
            Err(_) => return Err(GitError::Timeout { what, after: self.timeout }),
        };
        if out.len() as u64 > limit {
            return Err(GitError::TooLarge { what, limit });
        }
        if status.success() {
            return Ok(out);
        }
        let stderr = scrub(&String::from_utf8_lossy(&err), secret);
        Err(GitError::Failed { what, status: status.to_string(), stderr: tail(&stderr) })
    }

    fn command(&self, cwd: &Path, args: &[&str], creds: Option<&Credentials>) -> Command {
        let mut command = Command::new("git");
        // No credential helper may store or offer anything, and no config outside ours applies.
        command
            .args(["-c", "credential.helper=", "-c", "protocol.ext.allow=never"])
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", cwd)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ALLOW_PROTOCOL", &self.allow_protocols)
            .env("GIT_ASKPASS", &self.askpass)
            .env("SSH_ASKPASS", &self.askpass)
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        if let Some(ssh) = std::env::var_os("GIT_SSH_COMMAND") {
            command.env("GIT_SSH_COMMAND", ssh);
        }
        if let Some(creds) = creds {
            command.env("RAMEN_GIT_USERNAME", &creds.username);
            command.env("RAMEN_GIT_PASSWORD", &creds.password);
        }
        command
    }
}

/// `text` with `secret` and any `user:password@` in URLs replaced by `<redacted>`.
pub fn scrub(text: &str, secret: Option<&str>) -> String {
    let mut out = match secret {
        Some(secret) if !secret.is_empty() => text.replace(secret, "<redacted>"),
        _ => text.to_owned(),
    };
    for scheme in ["https://", "http://"] {
        let mut from = 0;
        while let Some(start) = out[from..].find(scheme).map(|i| i + from + scheme.len()) {
            let end = out[start..]
                .find(|c: char| c == '/' || c.is_whitespace() || c == '\'')
                .map_or(out.len(), |i| i + start);
            if let Some(at) = out[start..end].rfind('@') {
                out.replace_range(start..start + at, "<redacted>");
            }
            from = start.min(out.len());
        }
    }
    out
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_the_token_and_url_credentials() {
        let text =
            "fatal: unable to access 'https://x-access-token:tok123@github.com/a/b/': 403\ntok123";
        let clean = scrub(text, Some("tok123"));
        assert!(!clean.contains("tok123"), "{clean}");
        assert!(!clean.contains("x-access-token"), "{clean}");
        assert!(clean.contains("github.com/a/b"), "{clean}");
    }

    /// A repo's tree over the limit: git is stopped as soon as it writes past it, and the
    /// error names the limit (the whole output is never held).
    #[tokio::test]
    async fn output_past_the_limit_stops_git() {
        let repo = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(repo.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        git(&["init", "--quiet"]);
        std::fs::write(repo.path().join("big.bin"), vec![7u8; 256 << 10]).unwrap();
        git(&["add", "-A"]);
        git(&["commit", "--quiet", "-m", "big"]);
        let cache = tempfile::tempdir().unwrap();
        let runner = GitRunner::new(cache.path(), true, Duration::from_secs(60)).unwrap();
        let args = ["archive", "--format=tar", "HEAD"];
        let err = runner.run_limited(repo.path(), &args, None, 64 << 10).await.unwrap_err();
        assert_eq!(err.to_string(), "git archive wrote more than the limit of 64 KiB");
        let whole = runner.run_limited(repo.path(), &args, None, 1 << 20).await.unwrap();
        assert!(whole.len() > 256 << 10);
    }

    #[test]
    fn credentials_debug_hides_the_password() {
        let creds = Credentials { username: "x-access-token".into(), password: "tok123".into() };
        assert!(!format!("{creds:?}").contains("tok123"));
    }
}
