//! An environment's MCP authentication: what a group admin may set (checked here, each refusal
//! naming the field), and what its nodes and the edge enforce — the environment's own setting
//! with the platform default (`mcp_auth.*`) filled in where it names none, and the resource URL
//! tokens must name.

use ramen_proto::common::v1::{CallRule, McpAuth, McpAuthMode};

use crate::error::{Error, Result};

/// The platform default and the edge's public URL (`mcp_auth.*` of the config).
#[derive(Clone, Debug, Default)]
pub struct McpAuthDefaults {
    pub mode: McpAuthMode,
    pub issuers: Vec<String>,
    pub scopes: Vec<String>,
    /// Without a trailing slash.
    pub public_url: String,
    /// Cloud mode without `mcp_auth.public_url`: the default (`http://` + `listen.api`) names
    /// no address a client reaches, so no environment may take tokens yet.
    pub public_url_missing: bool,
}

impl McpAuthDefaults {
    pub fn from_config(config: &ramen_config::Config) -> Self {
        let mode = match config.mcp_auth.default_mode.trim() {
            "oauth" => McpAuthMode::Oauth,
            "both" => McpAuthMode::Both,
            _ => McpAuthMode::Keys,
        };
        Self {
            mode,
            issuers: config.mcp_auth.issuers(),
            scopes: config.mcp_auth.scopes(),
            public_url: config.mcp_auth.public_url(config.listen.api),
            public_url_missing: config.mode == ramen_config::Mode::Cloud
                && config.mcp_auth.public_url.trim().is_empty(),
        }
    }

    /// The environment's setting as enforced, and whether its mode is the platform default's.
    pub fn resolve(
        &self,
        own: Option<&McpAuth>,
        group: &str,
        environment: &str,
    ) -> (McpAuth, bool) {
        let own = own.cloned().unwrap_or_default();
        let inherited = own.mode() == McpAuthMode::Unspecified;
        let mut auth = own;
        if inherited {
            auth.set_mode(self.mode);
        }
        if auth.issuers.is_empty() {
            auth.issuers = self.issuers.clone();
        }
        if auth.scopes.is_empty() {
            auth.scopes = self.scopes.clone();
        }
        auth.resource = format!("{}/mcp/{group}/{environment}", self.public_url);
        (auth, inherited)
    }
}

const MAX_RULES: usize = 200;
const MAX_VALUES: usize = 200;
const MAX_RATE: u32 = 100_000;

/// A setting as a group admin sent it, checked and normalised (values trimmed, the resource
/// dropped: the deployer sets it). An OAuth mode needs an issuer, its own or the platform's.
pub fn checked(auth: &McpAuth, defaults: &McpAuthDefaults) -> Result<McpAuth> {
    let mut out = McpAuth {
        mode: auth.mode,
        issuers: Vec::new(),
        scopes: Vec::new(),
        rules: Vec::new(),
        calls_per_second: auth.calls_per_second,
        resource: String::new(),
    };
    if McpAuthMode::try_from(auth.mode).is_err() {
        return Err(Error::invalid(
            "auth.mode",
            format!("{} is not a mode (keys, oauth, both)", auth.mode),
        ));
    }
    for issuer in &auth.issuers {
        out.issuers.push(issuer_url(issuer)?);
    }
    for scope in &auth.scopes {
        out.scopes.push(token("auth.scopes", scope)?);
    }
    if out.calls_per_second > MAX_RATE {
        return Err(Error::invalid(
            "auth.calls_per_second",
            format!("{} is above the ceiling of {MAX_RATE} (0 = unlimited)", out.calls_per_second),
        ));
    }
    if auth.rules.len() > MAX_RULES {
        return Err(Error::invalid("auth.rules", format!("at most {MAX_RULES} rules")));
    }
    for (n, rule) in auth.rules.iter().enumerate() {
        out.rules.push(checked_rule(n, rule)?);
    }
    let mode = out.mode();
    let effective = if mode == McpAuthMode::Unspecified { defaults.mode } else { mode };
    let oauth = matches!(effective, McpAuthMode::Oauth | McpAuthMode::Both);
    if oauth && defaults.public_url_missing {
        return Err(Error::invalid(
            "auth.mode",
            "OAuth needs the URL clients reach the edge at, which names each environment's resource: an operator must set mcp_auth.public_url first",
        ));
    }
    if oauth && out.issuers.is_empty() && defaults.issuers.is_empty() {
        return Err(Error::invalid(
            "auth.issuers",
            "OAuth needs an authorization server: name its issuer URL here, or have an operator set mcp_auth.issuers",
        ));
    }
    Ok(out)
}

fn checked_rule(n: usize, rule: &CallRule) -> Result<CallRule> {
    let field = "auth.rules";
    let list = |what: &str, values: &[String]| -> Result<Vec<String>> {
        if values.len() > MAX_VALUES {
            return Err(Error::invalid(field, format!("rule {n}: at most {MAX_VALUES} {what}")));
        }
        values
            .iter()
            .map(|v| {
                let v = v.trim();
                if v.is_empty() || v.len() > 256 || v.chars().any(char::is_control) {
                    Err(Error::invalid(field, format!("rule {n}: {what} value {v:?} is empty, too long or has control characters")))
                } else {
                    Ok(v.to_owned())
                }
            })
            .collect()
    };
    let out = CallRule {
        subjects: list("subjects", &rule.subjects)?,
        groups: list("groups", &rule.groups)?,
        roles: list("roles", &rule.roles)?,
        scopes: list("scopes", &rule.scopes)?,
        keys: list("keys", &rule.keys)?,
        allow: list("allow", &rule.allow)?,
    };
    if out.allow.is_empty() {
        return Err(Error::invalid(
            field,
            format!("rule {n} allows nothing: name packages, tools or `*` in `allow`"),
        ));
    }
    for entry in &out.allow {
        if entry != "*" {
            crate::validate::blocked(std::slice::from_ref(entry)).map_err(|_| {
                Error::invalid(field, format!("rule {n}: {entry:?} is not `*`, a package (`weather`) or a tool (`weather.forecast`)"))
            })?;
        }
    }
    let token_conditions = !(out.subjects.is_empty()
        && out.groups.is_empty()
        && out.roles.is_empty()
        && out.scopes.is_empty());
    if token_conditions && !out.keys.is_empty() {
        return Err(Error::invalid(
            field,
            format!(
                "rule {n} names both keys and token claims: a caller is one or the other, so it could never match; make two rules"
            ),
        ));
    }
    Ok(out)
}

/// An issuer: [`ramen_service::rules::ISSUER`] (an https URL, or http on a loopback host),
/// stored without a trailing `/`.
fn issuer_url(raw: &str) -> Result<String> {
    if !ramen_service::rules::ISSUER.accepts(raw) {
        return Err(Error::invalid(
            "auth.issuers",
            format!("{raw:?} is not {}", ramen_service::rules::ISSUER.what),
        ));
    }
    Ok(raw.trim_end_matches('/').to_owned())
}

/// A scope: [`ramen_service::rules::SCOPE`] (RFC 6749 §3.3).
fn token(field: &'static str, raw: &str) -> Result<String> {
    if !ramen_service::rules::SCOPE.accepts(raw) {
        return Err(Error::invalid(
            field,
            format!("{raw:?} is not {}", ramen_service::rules::SCOPE.what),
        ));
    }
    Ok(raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> McpAuthDefaults {
        McpAuthDefaults { public_url: "https://mcp.example.com".into(), ..Default::default() }
    }

    #[test]
    fn resolves_the_platform_default_and_the_resource() {
        let defaults = McpAuthDefaults {
            mode: McpAuthMode::Oauth,
            issuers: vec!["https://idp.example".into()],
            scopes: vec!["mcp".into()],
            ..defaults()
        };
        let (auth, inherited) = defaults.resolve(None, "pay", "prod");
        assert!(inherited);
        assert_eq!(auth.mode(), McpAuthMode::Oauth);
        assert_eq!(auth.issuers, ["https://idp.example"]);
        assert_eq!(auth.resource, "https://mcp.example.com/mcp/pay/prod");
        let own = McpAuth {
            mode: McpAuthMode::Keys as i32,
            scopes: vec!["x".into()],
            ..Default::default()
        };
        let (auth, inherited) = defaults.resolve(Some(&own), "pay", "dev");
        assert!(!inherited);
        assert_eq!(
            (auth.mode(), auth.scopes.as_slice()),
            (McpAuthMode::Keys, ["x".to_owned()].as_slice())
        );
    }

    #[test]
    fn refusals_name_the_field_and_the_value() {
        let oauth = |issuers: &[&str]| McpAuth {
            mode: McpAuthMode::Oauth as i32,
            issuers: issuers.iter().map(|s| (*s).to_owned()).collect(),
            ..Default::default()
        };
        let error = checked(&oauth(&[]), &defaults()).unwrap_err().to_string();
        assert!(error.contains("auth.issuers") && error.contains("mcp_auth.issuers"), "{error}");
        let error = checked(&oauth(&["http://idp.example"]), &defaults()).unwrap_err().to_string();
        assert!(error.contains("https://"), "{error}");
        assert!(checked(&oauth(&["http://127.0.0.1:9000/"]), &defaults()).is_ok());
        assert_eq!(
            checked(&oauth(&["https://idp.example/"]), &defaults()).unwrap().issuers,
            ["https://idp.example"]
        );

        let rule = |allow: &[&str]| McpAuth {
            rules: vec![CallRule {
                groups: vec!["g".into()],
                allow: allow.iter().map(|s| (*s).to_owned()).collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let error = checked(&rule(&[]), &defaults()).unwrap_err().to_string();
        assert!(error.contains("rule 0 allows nothing"), "{error}");
        let error = checked(&rule(&["bad name"]), &defaults()).unwrap_err().to_string();
        assert!(error.contains("\"bad name\""), "{error}");
        assert!(checked(&rule(&["*", "notes.add"]), &defaults()).is_ok());
        let both = McpAuth {
            rules: vec![CallRule {
                keys: vec!["ci".into()],
                groups: vec!["g".into()],
                allow: vec!["*".into()],
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(checked(&both, &defaults()).unwrap_err().to_string().contains("make two rules"));
        let unset = McpAuthDefaults { public_url_missing: true, ..defaults() };
        let error = checked(&oauth(&["https://idp.example"]), &unset).unwrap_err().to_string();
        assert!(error.contains("mcp_auth.public_url"), "{error}");
        let fast = McpAuth { calls_per_second: 1_000_000, ..Default::default() };
        assert!(
            checked(&fast, &defaults()).unwrap_err().to_string().contains("auth.calls_per_second")
        );
        let scope = McpAuth { scopes: vec!["a b".into()], ..Default::default() };
        assert!(checked(&scope, &defaults()).unwrap_err().to_string().contains("auth.scopes"));
    }
}
