use std::fmt;
use std::marker::PhantomData;

/// The schema a payload type is published under: a dotted name such as
/// `ramen.events.v1.DeployFinished` and a version that grows with compatible changes.
/// Carried in the `Ramen-Schema` header as `<name>;v=<version>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schema {
    pub name: &'static str,
    pub version: u32,
}

impl Schema {
    pub const fn new(name: &'static str, version: u32) -> Self {
        Self { name, version }
    }

    pub(crate) fn header_value(&self) -> String {
        format!("{};v={}", self.name, self.version)
    }
}

/// Splits a `Ramen-Schema` header value into its name and version (version 1 when absent).
pub fn parse_schema_header(value: &str) -> (String, u32) {
    match value.split_once(";v=") {
        Some((name, version)) => (name.to_owned(), version.parse().unwrap_or(1)),
        None => (value.to_owned(), 1),
    }
}

/// A NATS subject (or a pattern with `*` / `>` for consumers) bound to the payload type `T`
/// and its [`Schema`], so publishers and consumers of one subject cannot disagree on the type.
pub struct Subject<T> {
    name: String,
    schema: Schema,
    _payload: PhantomData<fn() -> T>,
}

impl<T> Subject<T> {
    pub fn new(name: impl Into<String>, schema: Schema) -> Self {
        Self { name: name.into(), schema, _payload: PhantomData }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn schema(&self) -> Schema {
        self.schema
    }

    /// `ramen.jobs.deploy` + `g1` → `ramen.jobs.deploy.g1`, same payload type.
    pub fn child(&self, token: &str) -> Self {
        Self::new(format!("{}.{token}", self.name), self.schema)
    }

    /// The same subject with its last token replaced by `>`, for consumers of every child.
    pub fn all_children(&self) -> Self {
        Self::new(format!("{}.>", self.name), self.schema)
    }

    pub fn is_pattern(&self) -> bool {
        self.name.split('.').any(|token| token == "*" || token == ">")
    }
}

impl<T> Clone for Subject<T> {
    fn clone(&self) -> Self {
        Self::new(self.name.clone(), self.schema)
    }
}

impl<T> fmt::Debug for Subject<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subject").field("name", &self.name).field("schema", &self.schema).finish()
    }
}

impl<T> fmt::Display for Subject<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_header_round_trips() {
        let schema = Schema::new("ramen.events.v1.DeployFinished", 3);
        assert_eq!(
            parse_schema_header(&schema.header_value()),
            ("ramen.events.v1.DeployFinished".to_owned(), 3)
        );
        assert_eq!(parse_schema_header("x.y"), ("x.y".to_owned(), 1));
    }

    #[test]
    fn children_and_patterns() {
        let s: Subject<()> = Subject::new("ramen.jobs.deploy", Schema::new("j", 1));
        assert_eq!(s.child("g1").name(), "ramen.jobs.deploy.g1");
        assert!(s.all_children().is_pattern());
        assert!(!s.child("g1").is_pattern());
    }
}
