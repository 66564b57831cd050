use serde::{Deserialize, Serialize};
use serde_json::Value;

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

impl Report {
    /// Packages that failed to load, by name: a deploy's smoke test fails on any.
    pub fn load_errors(&self) -> Vec<(&str, &LoadError)> {
        self.packages
            .iter()
            .filter_map(|p| p.error.as_ref().map(|e| (p.name.as_str(), e)))
            .collect()
    }
}
