//! What the test sees and steers of the HTTP traffic: every request recorded (so a test
//! can check, or feed to `kubernetes-validate`, the manifests a client sent), and faults to
//! inject (an error status for the next N matching requests, a conflict on the next update
//! of one object).

use serde_json::Value;

/// One request the double received, as it arrived.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// The raw query string (without `?`), empty when none.
    pub query: String,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The body as JSON (or YAML, for apply patches), when it parses.
    pub fn json(&self) -> Option<Value> {
        if self.body.is_empty() {
            return None;
        }
        crate::apply::parse_body(&self.body).ok()
    }

    /// The value of one query parameter.
    pub fn query_param(&self, name: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == name).then(|| percent_decode(v))
        })
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.replace('+', " ").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = std::str::from_utf8(bytes.get(i + 1..i + 3).unwrap_or_default())
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Which requests a fault applies to: a method (or any) and a path prefix.
#[derive(Debug, Clone)]
pub struct RequestMatch {
    method: Option<String>,
    path_prefix: String,
}

impl RequestMatch {
    /// Requests with this method whose path starts with `path_prefix`
    /// (`RequestMatch::new("GET", "/apis/apps/v1/namespaces/a/deployments")`).
    pub fn new(method: &str, path_prefix: &str) -> Self {
        Self { method: Some(method.to_ascii_uppercase()), path_prefix: path_prefix.to_owned() }
    }

    /// Requests of any method whose path starts with `path_prefix`.
    pub fn any_method(path_prefix: &str) -> Self {
        Self { method: None, path_prefix: path_prefix.to_owned() }
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m == method) && path.starts_with(&self.path_prefix)
    }
}

#[derive(Debug)]
struct Rule {
    matcher: RequestMatch,
    status: u16,
    remaining: usize,
}

/// Faults waiting for their requests.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    rules: Vec<Rule>,
    conflicts: Vec<(String, String, String)>,
}

impl Faults {
    pub fn fail_next(&mut self, matcher: RequestMatch, status: u16, count: usize) {
        self.rules.push(Rule { matcher, status, remaining: count });
    }

    pub fn conflict_next_update(&mut self, kind: &str, ns: &str, name: &str) {
        self.conflicts.push((kind.to_owned(), ns.to_owned(), name.to_owned()));
    }

    pub fn clear(&mut self) {
        self.rules.clear();
        self.conflicts.clear();
    }

    /// The status to fail this request with, counting it against the first matching rule.
    pub fn take(&mut self, method: &str, path: &str) -> Option<u16> {
        let rule =
            self.rules.iter_mut().find(|r| r.remaining > 0 && r.matcher.matches(method, path))?;
        rule.remaining -= 1;
        let status = rule.status;
        self.rules.retain(|r| r.remaining > 0);
        Some(status)
    }

    /// True (once) when an update of this object should answer 409.
    pub fn take_conflict(&mut self, kind: &str, ns: &str, name: &str) -> bool {
        let position =
            self.conflicts.iter().position(|(k, n, o)| k == kind && n == ns && o == name);
        position.map(|i| self.conflicts.remove(i)).is_some()
    }
}
