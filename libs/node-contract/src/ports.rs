//! The addresses a node bound, written once it listens (`NodeConfig::ports_file`).

use std::net::SocketAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePorts {
    /// The process that bound them: a reader ignores a file left by an earlier process.
    pub pid: u32,
    pub mcp: SocketAddr,
    pub admin: SocketAddr,
    pub grpc: SocketAddr,
    /// The abstract Unix socket serving MCP too (`@name`), when the config asked for one
    /// (`NodeConfig::listen_local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_local: Option<String>,
}

impl NodePorts {
    /// Writes the file atomically (a reader sees the old file or the whole new one).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(tmp, path)
    }

    /// The ports process `pid` reported, once it has (`None` before, or for another pid).
    pub fn read(path: &Path, pid: u32) -> Option<Self> {
        let ports: Self = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        (ports.pid == pid).then_some(ports)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_back_only_for_the_process_that_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ports.json");
        assert_eq!(NodePorts::read(&path, 7), None);
        let ports = NodePorts {
            pid: 7,
            mcp: "127.0.0.1:1001".parse().unwrap(),
            admin: "127.0.0.1:1002".parse().unwrap(),
            grpc: "127.0.0.1:1003".parse().unwrap(),
            mcp_local: Some("@ramen/node/ab12".into()),
        };
        ports.write(&path).unwrap();
        assert_eq!(NodePorts::read(&path, 7), Some(ports.clone()));
        assert_eq!(NodePorts::read(&path, 8), None, "a file from another process is not read");
    }
}
