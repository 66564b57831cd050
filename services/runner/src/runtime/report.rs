//! The runtime's package report (its ready frame, and the answer to `list`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of server object (or program) a package is, as the runtime detects it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// SDK 2.x `MCPServer`.
    McpServer,
    /// SDK 1.x `FastMCP`.
    FastMcp1,
    /// The standalone `fastmcp` package.
    FastMcp,
    /// The SDK's low-level `Server` (1.x or 2.x).
    LowLevel,
    /// A stdio MCP server program named in `ramen.toml` (`server` is its command line).
    Stdio,
    /// Anything else with async `list_tools` / `call_tool`.
    Generic,
    /// A kind this node does not know yet (a newer runtime); served the same way.
    Other(String),
}

impl ServerKind {
    pub fn parse(kind: &str) -> Self {
        match kind {
            "mcpserver" => Self::McpServer,
            "fastmcp1" => Self::FastMcp1,
            "fastmcp" => Self::FastMcp,
            "lowlevel" => Self::LowLevel,
            "stdio" => Self::Stdio,
            "generic" => Self::Generic,
            other => Self::Other(other.to_owned()),
        }
    }
}

/// What the runtime loaded from a snapshot: per package its MCP objects (already namespaced
/// by the runtime when namespacing is on) or the error that kept it from loading.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Report {
    #[serde(default)]
    pub packages: Vec<PackageReport>,
    #[serde(default)]
    pub namespace: bool,
    #[serde(default)]
    pub python: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PackageReport {
    pub name: String,
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub error: Option<LoadError>,
    /// MCP `Tool` objects as the SDK serialized them (camelCase, `inputSchema`, …).
    #[serde(default)]
    pub tools: Vec<Value>,
    #[serde(default)]
    pub resources: Vec<Value>,
    #[serde(default)]
    pub resource_templates: Vec<Value>,
    #[serde(default)]
    pub prompts: Vec<Value>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LoadError {
    pub message: String,
    #[serde(default)]
    pub traceback: String,
}

impl PackageReport {
    pub fn server_kind(&self) -> Option<ServerKind> {
        self.kind.as_deref().map(ServerKind::parse)
    }

    /// One line for a reload's log: what was found (or why not) and what it serves.
    pub fn describe(&self) -> String {
        if let Some(error) = &self.error {
            return format!("{}: failed to load: {}", self.name, error.message);
        }
        let server = self.server.as_deref().unwrap_or("?");
        let what = match self.server_kind() {
            Some(ServerKind::Stdio) => format!("stdio program `{server}`"),
            Some(ServerKind::Other(kind)) => {
                format!("{server} (kind {kind:?}, unknown to this node)")
            }
            Some(_) => format!("{server} ({})", self.kind.as_deref().unwrap_or_default()),
            None => server.to_owned(),
        };
        format!(
            "{}: {what}: {} tools, {} resources, {} resource templates, {} prompts",
            self.name,
            self.tools.len(),
            self.resources.len(),
            self.resource_templates.len(),
            self.prompts.len()
        )
    }
}

impl Report {
    /// Packages that failed to load, by name: a deploy's smoke test fails on any.
    pub fn load_errors(&self) -> Vec<(&str, &LoadError)> {
        self.packages
            .iter()
            .filter_map(|p| p.error.as_ref().map(|e| (p.name.as_str(), e)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_the_runtime_is_read_and_described() {
        let report: Report = serde_json::from_value(serde_json::json!({
            "packages": [
                {"name": "time", "server": "python -m mcp_server_time --local-timezone UTC", "kind": "stdio", "error": null,
                 "tools": [{"name": "time.get_current_time"}], "resources": [], "resource_templates": [], "prompts": []},
                {"name": "low", "server": "low:server", "kind": "lowlevel", "error": null,
                 "tools": [], "resources": [], "resource_templates": [], "prompts": [{"name": "low.p"}]},
                {"name": "fm", "server": "fm:mcp", "kind": "fastmcp", "error": null},
                {"name": "future", "server": "future:x", "kind": "quantum", "error": null},
                {"name": "db", "server": null, "kind": "stdio",
                 "error": {"message": "cannot drive package 'db' (kind 'stdio', python -m db): it exited", "traceback": "boom"}}
            ],
            "namespace": true, "python": "3.11.2"
        }))
        .unwrap();
        let kinds: Vec<_> = report.packages.iter().map(PackageReport::server_kind).collect();
        assert_eq!(kinds[0], Some(ServerKind::Stdio));
        assert_eq!(kinds[1], Some(ServerKind::LowLevel));
        assert_eq!(kinds[2], Some(ServerKind::FastMcp));
        assert_eq!(kinds[3], Some(ServerKind::Other("quantum".into())));
        assert_eq!(
            report.packages[0].describe(),
            "time: stdio program `python -m mcp_server_time --local-timezone UTC`: 1 tools, 0 resources, 0 resource templates, 0 prompts"
        );
        assert!(report.packages[1].describe().starts_with("low: low:server (lowlevel): 0 tools"));
        assert!(report.packages[3].describe().contains("unknown to this node"));
        assert!(
            report.packages[4]
                .describe()
                .starts_with("db: failed to load: cannot drive package 'db'")
        );
        assert_eq!(report.load_errors().len(), 1);
    }
}
