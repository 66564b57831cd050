//! Page tokens: `<offset>` (the one page type of every service, `ramen_service::paging`) or,
//! for the newest-first audit log, `<offset>.<until_ms>` so later pages do not shift when
//! entries are appended meanwhile. Opaque to callers.

use ramen_proto::common::v1::{PageInfo, PageRequest};

use crate::error::AuthError;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub size: u64,
    pub offset: u64,
    /// Exclusive upper time bound pinned by the first page (audit only).
    pub until_ms: Option<i64>,
}

/// A page of a list whose tokens are plain offsets.
pub fn parse(request: Option<&PageRequest>) -> Result<Page, AuthError> {
    parse_tokens(request, false)
}

/// A page of the audit log, whose tokens may pin the first page's time.
pub fn parse_pinned(request: Option<&PageRequest>) -> Result<Page, AuthError> {
    parse_tokens(request, true)
}

fn parse_tokens(request: Option<&PageRequest>, pinned: bool) -> Result<Page, AuthError> {
    let mut request = request.cloned().unwrap_or_default();
    let bad = || AuthError::invalid("page_token", "is not a token this service returned");
    let until_ms = match request.page_token.trim().split_once('.') {
        Some(_) if !pinned => return Err(bad()),
        Some((offset, until)) => {
            let until = until.parse::<i64>().map_err(|_| bad())?;
            request.page_token = offset.to_owned();
            Some(until)
        }
        None => None,
    };
    let page = ramen_service::paging::Page::of(Some(&request)).map_err(|_| bad())?;
    Ok(Page { size: page.size, offset: page.offset, until_ms })
}

impl Page {
    /// How many to ask the store for: one more than a page, to learn whether another follows.
    pub fn probe(&self) -> u64 {
        self.size + 1
    }

    /// Trims `items` to the page and returns the page info for the next call.
    pub fn finish<T>(&self, items: &mut Vec<T>) -> PageInfo {
        let more = items.len() as u64 > self.size;
        items.truncate(self.size as usize);
        let next = self.offset + self.size;
        let next_page_token = match (more, self.until_ms) {
            (false, _) => String::new(),
            (true, Some(until)) => format!("{next}.{until}"),
            (true, None) => next.to_string(),
        };
        PageInfo { next_page_token, total: 0 }
    }
}

#[cfg(test)]
mod tests {
    use ramen_service::paging::{DEFAULT_SIZE, MAX_SIZE};

    use super::*;

    #[test]
    fn tokens_round_trip_and_bad_ones_are_named() {
        let first = parse(None).unwrap();
        assert_eq!(first, Page { size: DEFAULT_SIZE, offset: 0, until_ms: None });
        let page = Page { size: 2, offset: 4, until_ms: Some(99) };
        let mut items = vec![1, 2, 3];
        let info = page.finish(&mut items);
        assert_eq!(items, vec![1, 2]);
        let request = PageRequest { page_size: 2, page_token: info.next_page_token };
        assert_eq!(
            parse_pinned(Some(&request)).unwrap(),
            Page { size: 2, offset: 6, until_ms: Some(99) }
        );
        // Only the audit log pins a time: another list refuses a pinned token.
        assert!(parse(Some(&request)).is_err());
        let mut last = vec![1];
        assert!(page.finish(&mut last).next_page_token.is_empty());
        let bad = PageRequest { page_size: 0, page_token: "x".into() };
        assert!(parse(Some(&bad)).unwrap_err().to_string().starts_with("page_token"));
        let huge = PageRequest { page_size: 100_000, page_token: String::new() };
        assert_eq!(parse(Some(&huge)).unwrap().size, MAX_SIZE);
    }
}
