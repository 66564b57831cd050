//! `*`-only glob patterns, as IAM actions and resources use them.

/// Whether `text` falls under `pattern`. A `*` in `text` is taken as a literal character, so
/// for a `text` with wildcards this answers "every expansion of `text` falls under `pattern`"
/// conservatively: a yes is always right (a pattern's `*` absorbs whatever the text's `*`
/// expands to), a no may refuse a text a cleverer proof would allow.
pub fn matches(pattern: &str, text: &str, case_sensitive: bool) -> bool {
    let (p, t) = (chars(pattern, case_sensitive), chars(text, case_sensitive));
    // The classic two-pointer match with backtracking to the last star.
    let (mut i, mut j) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while j < t.len() {
        if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if i < p.len() && p[i] == t[j] {
            i += 1;
            j += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// Whether some string falls under both patterns (each `*` in either matches any run).
pub fn overlaps(a: &str, b: &str, case_sensitive: bool) -> bool {
    let (a, b) = (chars(a, case_sensitive), chars(b, case_sensitive));
    // reach[i][j]: the rest a[i..] and b[j..] can still produce a common string.
    let mut reach = vec![vec![false; b.len() + 1]; a.len() + 1];
    reach[a.len()][b.len()] = true;
    for i in (0..=a.len()).rev() {
        for j in (0..=b.len()).rev() {
            if i == a.len() && j == b.len() {
                continue;
            }
            let star_a = i < a.len() && a[i] == '*';
            let star_b = j < b.len() && b[j] == '*';
            reach[i][j] = (star_a && (reach[i + 1][j] || (j < b.len() && reach[i][j + 1])))
                || (star_b && (reach[i][j + 1] || (i < a.len() && reach[i + 1][j])))
                || (i < a.len() && j < b.len() && a[i] == b[j] && reach[i + 1][j + 1]);
        }
    }
    reach[0][0]
}

fn chars(s: &str, case_sensitive: bool) -> Vec<char> {
    if case_sensitive { s.chars().collect() } else { s.to_lowercase().chars().collect() }
}
