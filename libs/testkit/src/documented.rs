//! What the docs promise, read back so a test can hold the code to it.

/// The series named in `docs/operator-guide.md`'s metrics table, as their `# TYPE` names
/// (counters without `_total`). `a | b` cells name two series.
pub fn documented_metrics() -> Vec<String> {
    let path = crate::workers::repo_root().join("docs/operator-guide.md");
    let page = std::fs::read_to_string(path).expect("docs/operator-guide.md");
    let mut names = Vec::new();
    for line in page.lines().filter(|l| l.starts_with("| `ramen_")) {
        let cell = line.split('|').nth(1).unwrap_or_default();
        for name in cell.split('/').map(|n| n.trim().trim_matches('`')) {
            names.push(name.strip_suffix("_total").unwrap_or(name).to_owned());
        }
    }
    names
}

/// Documented series missing from a `/metrics` text.
pub fn undocumented_in(metrics: &str, names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|name| !metrics.lines().any(|l| l.starts_with(&format!("# TYPE {name} "))))
        .cloned()
        .collect()
}
