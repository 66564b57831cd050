//! Input rules stated once. The OpenAPI document carries each as JSON Schema (`pattern`,
//! `minLength`, `maxLength`, see `services/api-gateway/src/contract.rs`) and the services check
//! input with the very same rule ([`TextRule::accepts`]), so the document and the check cannot
//! disagree: a value one accepts the other accepts.
//!
//! Patterns are written in the subset that ECMA-262 (JSON Schema), Python's `re` (what
//! schemathesis generates from) and the `regex` crate read alike: ASCII ranges in classes, no
//! `.`, no `\s`/`\w`, no lookaround. Lengths are counted in characters, as JSON Schema counts.

use std::sync::OnceLock;

use regex::Regex;

pub struct TextRule {
    /// What a value of this kind is, for messages: "an email address".
    pub what: &'static str,
    /// Searched for, as JSON Schema does: anchor it (`^…$`) to mean the whole value.
    pub pattern: &'static str,
    pub min_chars: usize,
    pub max_chars: usize,
    compiled: OnceLock<Regex>,
}

impl TextRule {
    pub const fn new(
        what: &'static str,
        pattern: &'static str,
        min_chars: usize,
        max_chars: usize,
    ) -> Self {
        Self { what, pattern, min_chars, max_chars, compiled: OnceLock::new() }
    }

    /// Whether `value` keeps the rule: its length in characters within bounds and the pattern
    /// found in it.
    pub fn accepts(&self, value: &str) -> bool {
        let chars = value.chars().count();
        (self.min_chars..=self.max_chars).contains(&chars) && self.regex().is_match(value)
    }

    fn regex(&self) -> &Regex {
        // The patterns are constants of this module, each compiled by a test below.
        self.compiled.get_or_init(|| Regex::new(self.pattern).expect("a rule's pattern compiles"))
    }
}

/// An email address as HTML's `input type=email` defines it (the WHATWG "valid e-mail address"),
/// at most 254 characters (RFC 5321's path limit). Stored lowercased.
pub static EMAIL: TextRule = TextRule::new(
    "an email address (name@example.com)",
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
    3,
    254,
);

/// A new password: 12 to 256 characters, not only spaces. The upper bound caps the argon2 work
/// an unauthenticated caller can ask for.
pub static PASSWORD: TextRule = TextRule::new(
    "a password of 12 to 256 characters, not only spaces",
    r"[^\t\n\x0B\x0C\r ]",
    12,
    256,
);

/// A container image reference (`registry/name:tag`, `name@sha256:…`) or empty for the platform
/// default. ASCII, as the OCI distribution grammar is; never starting with `-` (it reaches
/// command lines).
pub static IMAGE_REFERENCE: TextRule = TextRule::new(
    "an image reference (registry/name:tag or name@sha256:digest), or empty",
    r"^([A-Za-z0-9][A-Za-z0-9._/:@-]*)?$",
    0,
    512,
);

/// A permission or resource pattern of the service-account bounds: printable ASCII without
/// spaces (IAM actions, roles and ARNs are).
pub static CLOUD_PATTERN: TextRule = TextRule::new(
    "a pattern (printable ASCII, no spaces, 1 to 512 characters)",
    r"^[!-~]+$",
    1,
    512,
);

/// An AWS resource pattern of the bounds: `*`, or an ARN naming its partition and service
/// literally (`arn:aws:s3:::bucket/*`): IAM takes a boundary's `Resource` only so.
pub static AWS_RESOURCE_PATTERN: TextRule = TextRule::new(
    "`*` or an ARN with a literal partition and service (arn:aws:s3:::name/*)",
    r"^(\*|arn:[!-)+-9;-~]+:[!-)+-9;-~]+:[!-~]*)$",
    1,
    512,
);

/// A GCP zone: `<area>-<location><digits>-<letter>` (`us-central1-a`).
pub static GCP_ZONE: TextRule =
    TextRule::new("a GCP zone (us-central1-a)", r"^[a-z]+-[a-z]+[0-9]+-[a-z]$", 1, 63);

/// An AWS availability zone: `<area>[-gov]-<location>-<digits><letter>` (`us-east-1a`).
pub static AWS_ZONE: TextRule = TextRule::new(
    "an AWS availability zone (us-east-1a)",
    r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]+[a-z]$",
    1,
    63,
);

/// A secret's name is an environment-variable name (`GITHUB_TOKEN`).
pub static SECRET_NAME: TextRule = TextRule::new(
    "an environment-variable name ([A-Za-z_][A-Za-z0-9_]*)",
    r"^[A-Za-z_][A-Za-z0-9_]*$",
    1,
    128,
);

/// A secret's value: anything, 1 to 65,536 characters.
pub static SECRET_VALUE: TextRule = TextRule::new("1 to 65536 characters", "", 1, 65_536);

/// Why a surface review was decided: free text up to 500 characters, or nothing.
pub static REVIEW_REASON: TextRule = TextRule::new("at most 500 characters", "", 0, 500);

/// A display name (an MCP key's): 1 to 64 characters, no control characters, not only spaces.
pub static DISPLAY_NAME: TextRule = TextRule::new(
    "1 to 64 printable characters, not only spaces",
    r"^[^\x00-\x1F\x7F-\x9F]*[^\x00-\x20\x7F-\x9F][^\x00-\x1F\x7F-\x9F]*$",
    1,
    64,
);

/// A GitHub App's private key as GitHub hands it out: PEM armour around the key, or empty to
/// remove it. The key itself is checked where it is used (signing the App's token).
pub static PEM_PRIVATE_KEY: TextRule = TextRule::new(
    "a PEM private key (-----BEGIN … PRIVATE KEY-----), or empty",
    r"^$|-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----",
    0,
    65_536,
);

/// An importable Python package name (a package of a group's repo, as paths name it).
pub static PACKAGE_NAME: TextRule = TextRule::new(
    "a Python package name ([A-Za-z_][A-Za-z0-9_]*)",
    r"^[A-Za-z_][A-Za-z0-9_]*$",
    1,
    200,
);

/// A package (`weather`) or tool (`weather.forecast`) name, as blocking and call rules name them.
pub static TOOL_NAME: TextRule = TextRule::new(
    "a package (`weather`) or tool (`weather.forecast`) name",
    r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$",
    1,
    200,
);

/// A deploy's idempotency key: printable ASCII without spaces, at most 128 characters.
pub static IDEMPOTENCY_KEY: TextRule =
    TextRule::new("at most 128 printable ASCII characters without spaces", r"^[!-~]*$", 0, 128);

/// An OAuth scope (RFC 6749 §3.3: printable ASCII without spaces, `"` or `\`), at most 128.
pub static SCOPE: TextRule = TextRule::new(
    "a scope (printable ASCII, no spaces, quotes or backslashes)",
    r#"^[!#-\[\]-~]+$"#,
    1,
    128,
);

/// An OpenID issuer: an https URL, or http on a loopback host (a provider on this machine);
/// printable ASCII without spaces or quotes. A trailing `/` is dropped when stored.
pub static ISSUER: TextRule = TextRule::new(
    "an issuer URL: https://… (http only on a loopback host)",
    r"^(https://[!#-.0-~][!#-~]*|http://(127\.0\.0\.1|localhost|\[::1\])([:/][!#-~]*)?)$",
    1,
    2048,
);

/// Ids ramen issues (users, MCP keys, deploy jobs): UUIDs, lowercase.
pub static ID: TextRule = TextRule::new(
    "an id (a UUID)",
    "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    36,
    36,
);

/// The most patterns one list of the service-account bounds holds.
pub const BOUNDS_MAX_PATTERNS: usize = 200;

/// The auto-rebalance interval in seconds, both ends included: at least 10 (each run may move
/// workers), at most a day (rarer than that, turn it off: `auto_rebalance_enabled = false`).
pub const REBALANCE_INTERVAL_SECONDS: (u32, u32) = (10, 86_400);

/// Every rule, for the tests (and the document's generator, which names them one by one).
pub fn all() -> [&'static TextRule; 18] {
    [
        &EMAIL,
        &PASSWORD,
        &IMAGE_REFERENCE,
        &CLOUD_PATTERN,
        &AWS_RESOURCE_PATTERN,
        &GCP_ZONE,
        &AWS_ZONE,
        &SECRET_NAME,
        &SECRET_VALUE,
        &REVIEW_REASON,
        &DISPLAY_NAME,
        &PEM_PRIVATE_KEY,
        &PACKAGE_NAME,
        &IDEMPOTENCY_KEY,
        &SCOPE,
        &ISSUER,
        &ID,
        &TOOL_NAME,
    ]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for rule in all() {
            Regex::new(rule.pattern).unwrap_or_else(|e| panic!("{}: {e}", rule.what));
            assert!(rule.min_chars <= rule.max_chars, "{}", rule.what);
        }
    }

    #[test]
    fn examples() {
        let cases: [(&TextRule, &[&str], &[&str]); 14] = [
            (&SCOPE, &["mcp", "api://x/.default"], &["", "a b", "a\"b", "a\\b", " mcp"]),
            (
                &ISSUER,
                &[
                    "https://idp.example",
                    "https://idp.example/",
                    "http://127.0.0.1:9000/",
                    "http://localhost",
                ],
                &[
                    "http://idp.example",
                    "https://",
                    "https:///",
                    "https://a b",
                    "http://localhost.evil",
                    " https://a",
                ],
            ),
            (&PACKAGE_NAME, &["weather", "_x1"], &["", "1a", "a-b", "a.b"]),
            (&IDEMPOTENCY_KEY, &["", "deploy-1"], &["a b", "é"]),
            (
                &EMAIL,
                &["a@b", "Ann.Lee+x@mail.example.com"],
                &["", "a", "a@", "@b", "a b@c", "a@b@c", "a@-b", " a@b"],
            ),
            (
                &PASSWORD,
                &["correct horse battery", "            x"],
                &["short", "            ", "\t\t\t\t\t\t\t\t\t\t\t\t\t"],
            ),
            (&IMAGE_REFERENCE, &["", "python:3.12", "ghcr.io/a/b@sha256:00"], &["-x", "a b", "é"]),
            (&CLOUD_PATTERN, &["s3:GetObject", "roles/storage.*"], &["", "a b", "é"]),
            (
                &AWS_RESOURCE_PATTERN,
                &["*", "arn:aws:s3:::bucket/*", "arn:aws:s3:"],
                &["arn:*:s3:::x", "arn:aws::x", "bucket", "arn:aws:s3"],
            ),
            (
                &GCP_ZONE,
                &["us-central1-a", "europe-west4-b"],
                &["us-central-a", "us-central1", "US-central1-a"],
            ),
            (
                &AWS_ZONE,
                &["us-east-1a", "us-gov-west-1a", "us-gov-1a"],
                &["us-east-1", "use-east-1a", "us-east-a"],
            ),
            (&REVIEW_REASON, &["", "checked with payments"], &[&"x".repeat(501)]),
            (&DISPLAY_NAME, &["ci", " ci key ", "clé"], &["", "   ", "a\nb", &"x".repeat(65)]),
            (
                &PEM_PRIVATE_KEY,
                &["", "-----BEGIN RSA PRIVATE KEY-----\nMII…", "-----BEGIN PRIVATE KEY-----"],
                &["key", "-----BEGIN PUBLIC KEY-----"],
            ),
        ];
        for (rule, good, bad) in cases {
            for value in good {
                assert!(rule.accepts(value), "{}: {value:?} refused", rule.what);
            }
            for value in bad {
                assert!(!rule.accepts(value), "{}: {value:?} accepted", rule.what);
            }
        }
    }

    proptest! {
        /// No input panics a rule, and a refusal is a plain `false`.
        #[test]
        fn any_input_is_judged(value in any::<String>()) {
            for rule in all() {
                let _ = rule.accepts(&value);
            }
        }
    }
}
