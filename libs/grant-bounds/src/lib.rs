//! Bounds on service-account rules: per cloud provider, the permissions (AWS actions, GCP
//! roles) and resources a group admin may grant the group's workers, set by a super admin.
//!
//! A rule is checked when it is set (auth refuses it) and again before a zone applies it (the
//! zone-manager refuses it, so rules stored before the bounds were narrowed are not applied).
//! On AWS the same bounds also become the role's permissions boundary, so IAM itself holds
//! the line should a check ever be missed.
//!
//! Patterns use `*` for any run of characters (as IAM does). Permissions compare without case
//! (IAM actions are case-insensitive), resources with it.

mod glob;
pub mod proto;

use serde::{Deserialize, Serialize};

pub use glob::{matches, overlaps};

/// What group admins may grant on one provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderBounds {
    /// Patterns a rule's permissions must each fall under.
    pub permissions: Vec<String>,
    /// Patterns no permission may touch, even one `permissions` covers; a wildcard permission
    /// that could expand to one of them is refused too. On AWS also explicit denies of the
    /// role's permissions boundary.
    pub denied: Vec<String>,
    /// Patterns a rule's resources must each fall under.
    pub resources: Vec<String>,
    /// Whether a permission may hold `*` (`s3:Get*`, `*`).
    #[serde(default)]
    pub wildcards: bool,
    /// Whether a rule may name no resource (or `*`): on AWS a grant on every resource, on GCP
    /// a binding on the whole project.
    #[serde(default)]
    pub unscoped: bool,
}

/// Per provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    pub aws: ProviderBounds,
    pub gcp: ProviderBounds,
}

/// A cloud whose service-account rules are bounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    Aws,
    Gcp,
}

impl Provider {
    /// The key in [`Bounds`] and in messages (`aws`, `gcp`).
    pub fn key(self) -> &'static str {
        match self {
            Self::Aws => "aws",
            Self::Gcp => "gcp",
        }
    }
}

impl Default for Bounds {
    /// Safe to start with: no wildcard, no IAM or account administration, no owner or editor
    /// role, nothing on every resource or the whole project.
    fn default() -> Self {
        let list = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        Self {
            aws: ProviderBounds {
                permissions: list(&["*"]),
                denied: list(&["iam:*", "sts:*", "organizations:*", "account:*"]),
                // Any resource a rule names (`*` alone is "unscoped", refused below).
                resources: list(&["*"]),
                wildcards: false,
                unscoped: false,
            },
            gcp: ProviderBounds {
                permissions: list(&["roles/*", "projects/*/roles/*", "organizations/*/roles/*"]),
                denied: list(&[
                    "roles/owner",
                    "roles/editor",
                    "roles/iam.*",
                    "roles/resourcemanager.*",
                ]),
                resources: list(&["*"]),
                wildcards: false,
                unscoped: false,
            },
        }
    }
}

impl Bounds {
    pub fn of(&self, provider: Provider) -> &ProviderBounds {
        match provider {
            Provider::Aws => &self.aws,
            Provider::Gcp => &self.gcp,
        }
    }

    /// Whether the bounds themselves are well formed: at most [`MAX_PATTERNS`] patterns per
    /// list, each printable ASCII without spaces, 1 to 512 characters ([`ramen_rules::CLOUD_PATTERN`]).
    pub fn validate(&self) -> Result<(), InvalidBounds> {
        for provider in [Provider::Aws, Provider::Gcp] {
            let bounds = self.of(provider);
            let lists = [
                ("permissions", &bounds.permissions),
                ("denied", &bounds.denied),
                ("resources", &bounds.resources),
            ];
            for (name, list) in lists {
                let field = format!("{}.{name}", provider.key());
                if list.len() > MAX_PATTERNS {
                    return Err(InvalidBounds {
                        field,
                        problem: format!("over {MAX_PATTERNS} patterns"),
                    });
                }
                if let Some(bad) = list.iter().find(|p| !well_formed(p)) {
                    return Err(InvalidBounds {
                        field,
                        problem: format!(
                            "{bad:?} is not a pattern (printable ASCII, no spaces, 1 to 512 characters)"
                        ),
                    });
                }
                // The AWS resource patterns become the boundary's `Resource`, which IAM takes
                // only as `*` or an ARN naming its partition and service.
                if provider == Provider::Aws
                    && name == "resources"
                    && let Some(bad) = list.iter().find(|p| !aws_resource_pattern(p))
                {
                    return Err(InvalidBounds {
                        field,
                        problem: format!(
                            "{bad:?} is not `*` or an ARN pattern naming its partition and service (arn:aws:s3:::team-*)"
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The most patterns one list of the bounds holds.
pub const MAX_PATTERNS: usize = ramen_rules::BOUNDS_MAX_PATTERNS;

/// [`ramen_rules::AWS_RESOURCE_PATTERN`]: the API document states the same rule.
fn aws_resource_pattern(pattern: &str) -> bool {
    ramen_rules::AWS_RESOURCE_PATTERN.accepts(pattern)
}

/// [`ramen_rules::CLOUD_PATTERN`]: the API document states the same rule.
fn well_formed(pattern: &str) -> bool {
    ramen_rules::CLOUD_PATTERN.accepts(pattern)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bounds {field}: {problem}")]
pub struct InvalidBounds {
    /// `aws.denied`, say.
    pub field: String,
    pub problem: String,
}

/// Why a rule is outside the bounds: the rule (1-based, as people count), what in it, and the
/// bound it crosses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule {rule}: {what} is outside the {provider} bounds: {bound}")]
pub struct OutOfBounds {
    pub rule: usize,
    pub provider: &'static str,
    /// `permission "iam:PassRole"`, `no resource`.
    pub what: String,
    /// The bound and its setting, naming the field a super admin would change.
    pub bound: String,
}

/// Checks rule `index` (0-based) of `provider` with these `permissions` on these `resources`.
pub fn check(
    bounds: &ProviderBounds,
    provider: Provider,
    index: usize,
    permissions: &[String],
    resources: &[String],
) -> Result<(), OutOfBounds> {
    let key = provider.key();
    let refuse = |what: String, bound: String| OutOfBounds {
        rule: index + 1,
        provider: match provider {
            Provider::Aws => "AWS",
            Provider::Gcp => "GCP",
        },
        what,
        bound,
    };
    for permission in permissions {
        let what = || format!("permission {permission:?}");
        if permission.contains('*') && !bounds.wildcards {
            return Err(refuse(what(), format!("no wildcards ({key}.wildcards is false)")));
        }
        if let Some(denied) = bounds.denied.iter().find(|d| overlaps(d, permission, false)) {
            return Err(refuse(what(), format!("{key}.denied holds {denied:?}")));
        }
        if !bounds.permissions.iter().any(|p| matches(p, permission, false)) {
            return Err(refuse(
                what(),
                format!("{key}.permissions allows only {:?}", bounds.permissions),
            ));
        }
    }
    let unscoped = resources.is_empty() || resources.iter().any(|r| r == "*");
    if unscoped && !bounds.unscoped {
        let reach = match provider {
            Provider::Aws => "every resource (Resource \"*\")",
            Provider::Gcp => "the whole project",
        };
        return Err(refuse(
            "a grant on ".to_owned() + reach,
            format!("rules must name their resources ({key}.unscoped is false)"),
        ));
    }
    for resource in resources.iter().filter(|r| *r != "*") {
        if !bounds.resources.iter().any(|p| matches(p, resource, true)) {
            return Err(refuse(
                format!("resource {resource:?}"),
                format!("{key}.resources allows only {:?}", bounds.resources),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
