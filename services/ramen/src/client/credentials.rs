//! The stored login: `$RAMEN_CLI_CONFIG` or `~/.config/ramen/cli.json`, mode 0600.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Credentials {
    pub api_url: String,
    #[serde(default)]
    pub email: String,
    #[serde(default)]
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: String,
}

pub fn path() -> PathBuf {
    if let Some(path) = std::env::var_os("RAMEN_CLI_CONFIG") {
        return PathBuf::from(path);
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("ramen/cli.json")
}

pub fn load() -> Option<Credentials> {
    serde_json::from_slice(&std::fs::read(path()).ok()?).ok()
}

pub fn save(credentials: &Credentials) -> std::io::Result<()> {
    let path = path();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(&serde_json::to_vec_pretty(credentials).map_err(std::io::Error::other)?)?;
    file.sync_all()?;
    std::fs::rename(tmp, path)
}
