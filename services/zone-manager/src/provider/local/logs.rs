//! Worker log files: the tail quoted when a worker is not ready, and a size cap.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Lines quoted from a worker's log in errors and on its record.
pub const TAIL_LINES: usize = 20;
/// A log above this is moved to `worker.log.1` when the worker starts again.
const MAX_LOG_BYTES: u64 = 8 * 1024 * 1024;

/// The last `lines` non-empty lines of the file, without terminal colour codes.
pub(crate) fn tail(path: &Path, lines: usize) -> Vec<String> {
    let Ok(mut file) = std::fs::File::open(path) else { return Vec::new() };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(64 * 1024);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<String> = text
        .lines()
        .map(strip_ansi)
        .map(|l| l.trim_end().to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    all[all.len().saturating_sub(lines)..].to_vec()
}

/// Keeps one previous log when the current one grew large.
pub(crate) fn rotate(path: &Path) {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = std::fs::rename(path, path.with_extension("log.1"));
    }
}

/// Drops `ESC [ ... <letter>` sequences.
pub(crate) fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colours_and_keeps_the_last_lines() {
        assert_eq!(
            strip_ansi("\u{1b}[2mtime\u{1b}[0m \u{1b}[31mERROR\u{1b}[0m boom"),
            "time ERROR boom"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let text: String = (0..30).map(|i| format!("line {i}\n\n")).collect();
        std::fs::write(&path, text).unwrap();
        let lines = tail(&path, 3);
        assert_eq!(lines, vec!["line 27", "line 28", "line 29"]);
        assert!(tail(&dir.path().join("missing"), 3).is_empty());
    }
}
