//! Tables for people, JSON for scripts.

use serde_json::Value;

/// Prints `value` as JSON when `json`, else `items` as a table with `columns` (field paths,
/// `a.b` for nested fields; lists are joined with commas).
#[allow(clippy::print_stdout)]
pub fn print(value: &Value, json: bool, columns: &[&str]) {
    if json {
        println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
        return;
    }
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(map) if map.get("items").is_some_and(Value::is_array) => {
            map["items"].as_array().map(|a| a.iter().collect()).unwrap_or_default()
        }
        other => vec![other],
    };
    let rows: Vec<Vec<String>> =
        items.iter().map(|item| columns.iter().map(|c| cell(item, c)).collect()).collect();
    let headers: Vec<String> =
        columns.iter().map(|c| c.rsplit('.').next().unwrap_or(c).to_ascii_uppercase()).collect();
    let widths: Vec<usize> = (0..columns.len())
        .map(|i| {
            rows.iter().map(|r| r[i].chars().count()).chain([headers[i].len()]).max().unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    println!("{}", line(&headers));
    for row in &rows {
        println!("{}", line(row));
    }
    if rows.is_empty() {
        println!("(none)");
    }
}

fn cell(item: &Value, path: &str) -> String {
    let value = path.split('.').fold(item, |value, part| &value[part]);
    render(value)
}

fn render(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(render).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// One line on stdout, unless `--json` asked for machine output only.
#[allow(clippy::print_stdout)]
pub fn say(json: bool, message: &str) {
    if !json {
        println!("{message}");
    }
}
