//! Who may call what on an environment, decided the same way at the edge and on the nodes.
//!
//! An environment authenticates its callers by [`AuthMode`]: MCP keys, OAuth 2.1 access
//! tokens, or either. Its [`Rule`]s then decide, per caller, which packages and tools it may
//! list and call: a caller matches a rule when every condition the rule sets matches (any one
//! value of each list), and may use the union of what the rules it matches allow. With no
//! rules every authenticated caller may use everything that is not blocked — what an
//! environment allowed before rules existed. What a caller may not use is treated exactly like
//! a blocked tool: it vanishes from that caller's lists and answers -32601.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

/// How an environment's callers authenticate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// MCP keys only.
    #[default]
    Keys,
    /// OAuth 2.1 access tokens only.
    Oauth,
    /// Either.
    Both,
}

impl AuthMode {
    pub fn keys(self) -> bool {
        matches!(self, Self::Keys | Self::Both)
    }

    pub fn oauth(self) -> bool {
        matches!(self, Self::Oauth | Self::Both)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Keys => "keys",
            Self::Oauth => "oauth",
            Self::Both => "both",
        }
    }
}

impl std::str::FromStr for AuthMode {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "keys" => Ok(Self::Keys),
            "oauth" => Ok(Self::Oauth),
            "both" => Ok(Self::Both),
            other => Err(format!("auth mode {other:?} is not one of keys, oauth, both")),
        }
    }
}

/// One rule: conditions on the caller, and what a matching caller may use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Rule {
    /// Token subjects (`sub`).
    pub subjects: Vec<String>,
    /// Values of the token's groups claim.
    pub groups: Vec<String>,
    /// Values of the token's roles claim.
    pub roles: Vec<String>,
    /// Scopes the token holds.
    pub scopes: Vec<String>,
    /// MCP keys, by id or name.
    pub keys: Vec<String>,
    /// Packages (`weather`), tools or prompts (`weather.forecast`), or `*`.
    pub allow: Vec<String>,
}

/// What is known of a caller once it is authenticated.
#[derive(Clone, Copy, Debug)]
pub enum Who<'a> {
    /// An OAuth access token's claims.
    Token { subject: &'a str, groups: &'a [String], roles: &'a [String], scopes: &'a [String] },
    /// An MCP key.
    Key { id: &'a str, name: &'a str },
    /// Nobody in particular: an environment taking calls without keys (fixtures only).
    Anonymous,
}

impl Rule {
    /// Whether `who` meets every condition this rule sets. A rule that sets none matches
    /// every caller; a token condition never matches a key and the other way round.
    pub fn matches(&self, who: &Who<'_>) -> bool {
        let any_of = |wanted: &[String], held: &[String]| {
            wanted.is_empty() || wanted.iter().any(|w| held.contains(w))
        };
        match who {
            Who::Token { subject, groups, roles, scopes } => {
                self.keys.is_empty()
                    && (self.subjects.is_empty() || self.subjects.iter().any(|s| s == subject))
                    && any_of(&self.groups, groups)
                    && any_of(&self.roles, roles)
                    && any_of(&self.scopes, scopes)
            }
            Who::Key { id, name } => {
                self.subjects.is_empty()
                    && self.groups.is_empty()
                    && self.roles.is_empty()
                    && self.scopes.is_empty()
                    && (self.keys.is_empty() || self.keys.iter().any(|k| k == id || k == name))
            }
            Who::Anonymous => {
                self.subjects.is_empty()
                    && self.groups.is_empty()
                    && self.roles.is_empty()
                    && self.scopes.is_empty()
                    && self.keys.is_empty()
            }
        }
    }
}

/// An environment's rules, ready to decide.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    rules: Vec<Rule>,
}

/// What one caller may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Everything not blocked (no rules, or a rule allowing `*`).
    Everything,
    /// The packages and names listed by the rules the caller matches (none: nothing).
    Only(HashSet<String>),
}

impl Rules {
    pub fn new(rules: Vec<Rule>) -> Self {
        let rules = rules
            .into_iter()
            .map(|mut r| {
                for list in [
                    &mut r.subjects,
                    &mut r.groups,
                    &mut r.roles,
                    &mut r.scopes,
                    &mut r.keys,
                    &mut r.allow,
                ] {
                    for value in list.iter_mut() {
                        *value = value.trim().to_owned();
                    }
                    list.retain(|v| !v.is_empty());
                }
                r
            })
            .collect();
        Self { rules }
    }

    /// No rules: every caller may use everything.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// What `who` may use.
    pub fn grant(&self, who: &Who<'_>) -> Grant {
        if self.rules.is_empty() {
            return Grant::Everything;
        }
        let mut allowed = HashSet::new();
        for rule in self.rules.iter().filter(|r| r.matches(who)) {
            if rule.allow.iter().any(|a| a == "*") {
                return Grant::Everything;
            }
            allowed.extend(rule.allow.iter().cloned());
        }
        Grant::Only(allowed)
    }
}

impl Grant {
    pub fn is_everything(&self) -> bool {
        matches!(self, Self::Everything)
    }

    /// Whether a tool or prompt (`package.name`; `package` is the package that serves it) may
    /// be used: it, or its package, is allowed.
    pub fn name(&self, package: &str, name: &str) -> bool {
        match self {
            Self::Everything => true,
            Self::Only(allowed) => allowed.contains(name) || allowed.contains(package),
        }
    }

    /// Whether a package's resources may be read (resources are allowed by package).
    pub fn package(&self, package: &str) -> bool {
        match self {
            Self::Everything => true,
            Self::Only(allowed) => allowed.contains(package),
        }
    }

    /// Whether the caller may use nothing at all: the edge refuses its calls before any
    /// node sees them. (Short of that the edge cannot tell from a name alone: a package may
    /// serve names without its prefix, so the node decides with its catalog.)
    pub fn is_nothing(&self) -> bool {
        matches!(self, Self::Only(allowed) if allowed.is_empty())
    }
}

/// What a call names, by its method: a `tool`, `prompt` or `resource`; `None` for methods
/// that name nothing.
pub fn target_kind(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" => Some("tool"),
        "prompts/get" => Some("prompt"),
        "resources/read" => Some("resource"),
        _ => None,
    }
}

/// The answer to a target the caller may not use (-32601, as for a blocked one: to this caller
/// it does not exist), in the same words from the node and the edge; `method` is the call's.
pub fn not_available_message(method: &str, target: &str) -> String {
    let what = target_kind(method).unwrap_or("tool");
    format!("{what} `{target}` is not available to this caller on this environment")
}

#[cfg(test)]
mod tests;
