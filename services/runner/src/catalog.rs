//! The MCP objects the runtime loaded, indexed by name and URI with the package each belongs
//! to, so the node can filter lists and refuse blocked calls without asking the runtime.

use std::sync::Arc;

use serde_json::Value;

use ramen_call_rules::Grant;

use crate::HashMap;
use crate::policy::Policy;
use crate::runtime::Report;

#[derive(Debug, Default)]
pub struct Catalog {
    pub report: Arc<Report>,
    tools: Vec<Entry>,
    prompts: Vec<Entry>,
    resources: Vec<Entry>,
    templates: Vec<Template>,
    tool_index: HashMap<String, usize>,
    prompt_index: HashMap<String, usize>,
    resource_index: HashMap<String, usize>,
    /// Tools whose input schema marks parameters `x-mcp-header` (2026-07-28), by name.
    param_headers: HashMap<String, Vec<ParamHeader>>,
}

/// A tool parameter mirrored into an `Mcp-Param-{name}` header.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamHeader {
    /// Lower-case header name, `mcp-param-region`.
    pub header: String,
    /// The chain of `properties` keys from the schema root to the parameter.
    pub path: Vec<String>,
    /// The schema's `type` of the parameter (`string`, `integer`, `boolean`).
    pub kind: String,
}

#[derive(Debug)]
struct Entry {
    package: String,
    key: String,
    object: Value,
}

#[derive(Debug)]
struct Template {
    entry: Entry,
    pattern: UriTemplate,
}

/// What kind of object a list call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Tools,
    Prompts,
    Resources,
    ResourceTemplates,
}

impl Catalog {
    pub fn new(report: Arc<Report>) -> Self {
        let mut catalog = Self { report: report.clone(), ..Default::default() };
        for package in report.packages.iter().filter(|p| p.error.is_none()) {
            let entry = |object: &Value, field: &str| Entry {
                package: package.name.clone(),
                key: object.get(field).and_then(Value::as_str).unwrap_or_default().to_owned(),
                object: object.clone(),
            };
            catalog.tools.extend(package.tools.iter().map(|t| entry(t, "name")));
            catalog.prompts.extend(package.prompts.iter().map(|p| entry(p, "name")));
            catalog.resources.extend(package.resources.iter().map(|r| entry(r, "uri")));
            catalog.templates.extend(package.resource_templates.iter().map(|t| {
                let entry = entry(t, "uriTemplate");
                let pattern = UriTemplate::parse(&entry.key);
                Template { entry, pattern }
            }));
        }
        let index = |entries: &[Entry]| {
            entries.iter().enumerate().map(|(i, e)| (e.key.clone(), i)).collect()
        };
        catalog.tool_index = index(&catalog.tools);
        for tool in &catalog.tools {
            let mut found = Vec::new();
            if let Some(schema) = tool.object.get("inputSchema") {
                collect_param_headers(schema, &mut Vec::new(), &mut found);
            }
            if !found.is_empty() {
                catalog.param_headers.insert(tool.key.clone(), found);
            }
        }
        catalog.prompt_index = index(&catalog.prompts);
        catalog.resource_index = index(&catalog.resources);
        catalog
    }

    /// The package of a tool, when the tool exists.
    pub fn tool_package(&self, name: &str) -> Option<&str> {
        self.tool_index.get(name).map(|&i| self.tools[i].package.as_str())
    }

    pub fn prompt_package(&self, name: &str) -> Option<&str> {
        self.prompt_index.get(name).map(|&i| self.prompts[i].package.as_str())
    }

    /// The package serving a URI: a static resource first, then the first matching template.
    pub fn resource_package(&self, uri: &str) -> Option<&str> {
        if let Some(&i) = self.resource_index.get(uri) {
            return Some(&self.resources[i].package);
        }
        self.templates.iter().find(|t| t.pattern.matches(uri)).map(|t| t.entry.package.as_str())
    }

    /// The `Mcp-Param-*` headers a call of `tool` must carry (empty for most tools).
    pub fn param_headers(&self, tool: &str) -> &[ParamHeader] {
        self.param_headers.get(tool).map_or(&[], Vec::as_slice)
    }

    /// How many objects of `kind` the packages serve, hidden or not.
    pub fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Tools => self.tools.len(),
            Kind::Prompts => self.prompts.len(),
            Kind::Resources => self.resources.len(),
            Kind::ResourceTemplates => self.templates.len(),
        }
    }

    /// The objects of `kind` the policy lets a caller with `grant` see, in load order.
    pub fn visible<'a>(
        &'a self,
        kind: Kind,
        policy: &'a Policy,
        grant: &'a Grant,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        let entries: Box<dyn Iterator<Item = &Entry>> = match kind {
            Kind::Tools => Box::new(self.tools.iter()),
            Kind::Prompts => Box::new(self.prompts.iter()),
            Kind::Resources => Box::new(self.resources.iter()),
            Kind::ResourceTemplates => Box::new(self.templates.iter().map(|t| &t.entry)),
        };
        entries
            .filter(move |e| match kind {
                Kind::Tools => !policy.tool_hidden(&e.package, &e.key),
                _ => !policy.package_hidden(&e.package),
            })
            .filter(move |e| match kind {
                Kind::Tools | Kind::Prompts => grant.name(&e.package, &e.key),
                Kind::Resources | Kind::ResourceTemplates => grant.package(&e.package),
            })
            .map(|e| &e.object)
    }
}

/// `x-mcp-header` annotations reachable from the schema root through `properties` only
/// (the spec ignores any elsewhere).
fn collect_param_headers(schema: &Value, path: &mut Vec<String>, out: &mut Vec<ParamHeader>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(name) = property.get("x-mcp-header").and_then(Value::as_str) {
            out.push(ParamHeader {
                header: format!("mcp-param-{}", name.to_ascii_lowercase()),
                path: path.clone(),
                kind: property.get("type").and_then(Value::as_str).unwrap_or("string").to_owned(),
            });
        }
        collect_param_headers(property, path, out);
        path.pop();
    }
}

/// RFC 6570 level-1 matching: `{var}` matches one non-empty run without `/`; `{+var}`
/// and `{/var*}`-style expansions match any non-empty run.
#[derive(Debug)]
struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug)]
enum Part {
    Literal(String),
    Segment,
    Any,
}

impl UriTemplate {
    fn parse(template: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                parts.push(Part::Literal(rest[open..].to_owned()));
                rest = "";
                break;
            };
            let expression = &rest[open + 1..open + close];
            parts.push(if expression.starts_with(['+', '#', '/']) || expression.ends_with('*') {
                Part::Any
            } else {
                Part::Segment
            });
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Self { parts }
    }

    fn matches(&self, uri: &str) -> bool {
        match_parts(&self.parts, uri)
    }
}

fn match_parts(parts: &[Part], uri: &str) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(lit), rest)) => {
            uri.strip_prefix(lit.as_str()).is_some_and(|u| match_parts(rest, u))
        }
        Some((variable, rest)) => {
            let limit = match variable {
                Part::Segment => uri.find('/').unwrap_or(uri.len()),
                _ => uri.len(),
            };
            (1..=limit).rev().any(|end| uri.is_char_boundary(end) && match_parts(rest, &uri[end..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::PolicyConfig;
    use crate::runtime::PackageReport;

    fn report() -> Arc<Report> {
        Arc::new(Report {
            packages: vec![
                PackageReport {
                    name: "weather".into(),
                    tools: vec![
                        json!({"name": "weather.forecast", "inputSchema": {"type": "object", "properties": {
                            "region": {"type": "string", "x-mcp-header": "Region"},
                            "where": {"type": "object", "properties": {"zip": {"type": "integer", "x-mcp-header": "Zip"}}},
                            "list": {"type": "array", "items": {"x-mcp-header": "Nope"}}
                        }}}),
                        json!({"name": "weather.alerts"}),
                    ],
                    prompts: vec![json!({"name": "weather.brief"})],
                    resources: vec![json!({"uri": "weather://stations"})],
                    resource_templates: vec![json!({"uriTemplate": "weather://city/{name}/today"})],
                    ..Default::default()
                },
                PackageReport {
                    name: "notes".into(),
                    tools: vec![json!({"name": "notes.add"})],
                    ..Default::default()
                },
                PackageReport {
                    name: "broken".into(),
                    tools: vec![json!({"name": "broken.x"})],
                    error: Some(crate::runtime::LoadError {
                        message: "boom".into(),
                        traceback: String::new(),
                    }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        })
    }

    #[test]
    fn lookups_and_templates() {
        let catalog = Catalog::new(report());
        assert_eq!(catalog.tool_package("weather.alerts"), Some("weather"));
        assert_eq!(
            catalog.tool_package("broken.x"),
            None,
            "a package that failed to load serves nothing"
        );
        assert_eq!(catalog.resource_package("weather://stations"), Some("weather"));
        assert_eq!(catalog.resource_package("weather://city/paris/today"), Some("weather"));
        assert_eq!(
            catalog.resource_package("weather://city/a/b/today"),
            None,
            "{{var}} spans one segment"
        );
        assert_eq!(catalog.resource_package("weather://city//today"), None);
        assert_eq!(catalog.prompt_package("weather.brief"), Some("weather"));
        let headers = catalog.param_headers("weather.forecast");
        assert_eq!(headers.len(), 2, "{headers:?}: nothing under `items`");
        assert_eq!(headers[0].header, "mcp-param-region");
        assert_eq!(
            (headers[1].path.join("."), headers[1].kind.as_str()),
            ("where.zip".into(), "integer")
        );
        assert!(catalog.param_headers("weather.alerts").is_empty());
        assert_eq!(catalog.count(Kind::Tools), 3);
    }

    #[test]
    fn policy_filters_lists() {
        let catalog = Catalog::new(report());
        let policy = Policy::compile(PolicyConfig {
            blocked: vec!["weather.alerts".into()],
            disabled_packages: vec!["notes".into()],
            ..Default::default()
        })
        .unwrap();
        let tools: Vec<_> = catalog
            .visible(Kind::Tools, &policy, &Grant::Everything)
            .map(|t| t["name"].clone())
            .collect();
        assert_eq!(tools, vec![json!("weather.forecast")]);
        let whole =
            Policy::compile(PolicyConfig { blocked: vec!["weather".into()], ..Default::default() })
                .unwrap();
        assert_eq!(catalog.visible(Kind::Tools, &whole, &Grant::Everything).count(), 1);
        assert_eq!(catalog.visible(Kind::Prompts, &whole, &Grant::Everything).count(), 0);
        assert_eq!(catalog.visible(Kind::ResourceTemplates, &whole, &Grant::Everything).count(), 0);
    }
}
