//! The one page type of every service's list RPCs. Offset paging: `page_size` 0 asks for
//! [`DEFAULT_SIZE`], larger sizes are capped at [`MAX_SIZE`], and `page_token` is the offset of
//! the next page, a number this server issued. Lists are paged by the store (skip and limit,
//! one item more than the page to learn whether another follows), not in memory.

use ramen_proto::common::v1::{PageInfo, PageRequest};
use ramen_store::Query;

/// Items per page when the request names no size.
pub const DEFAULT_SIZE: u64 = 100;
/// The most items one page returns.
pub const MAX_SIZE: u64 = 1000;

/// A page request made concrete: skip `offset` items, return up to `size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub offset: u64,
    pub size: u64,
}

/// A `page_token` this server did not issue.
#[derive(Debug, thiserror::Error)]
#[error("not a token this server issued")]
pub struct BadPageToken;

impl Page {
    pub fn of(request: Option<&PageRequest>) -> Result<Self, BadPageToken> {
        let (size, token) = request.map_or((0, ""), |r| (r.page_size, r.page_token.as_str()));
        let size = match u64::from(size) {
            0 => DEFAULT_SIZE,
            n => n.min(MAX_SIZE),
        };
        // Exactly the digits this server writes (the API document's pattern): no sign, no
        // spaces.
        if !token.bytes().all(|b| b.is_ascii_digit()) {
            return Err(BadPageToken);
        }
        let offset = if token.is_empty() { 0 } else { token.parse().map_err(|_| BadPageToken)? };
        Ok(Self { offset, size })
    }

    /// Everything (internal sweeps, never an RPC's answer).
    pub fn all() -> Self {
        Self { offset: 0, size: u64::from(u32::MAX) }
    }

    /// `query` asking the store for this page plus one look-ahead item.
    pub fn query(&self, query: Query) -> Query {
        query.skip(self.offset).limit(self.size + 1)
    }

    /// Trims the look-ahead item and says where the next page starts (`total` when known,
    /// else 0).
    pub fn finish<T>(&self, mut items: Vec<T>, total: u64) -> (Vec<T>, PageInfo) {
        let more = items.len() as u64 > self.size;
        items.truncate(self.size as usize);
        let next_page_token =
            if more { (self.offset + self.size).to_string() } else { String::new() };
        (items, PageInfo { next_page_token, total })
    }

    /// Pages a list already in memory (a snapshot, not a store read).
    pub fn slice<T>(&self, items: Vec<T>) -> (Vec<T>, PageInfo) {
        let total = items.len() as u64;
        let window: Vec<T> =
            items.into_iter().skip(self.offset as usize).take(self.size as usize + 1).collect();
        self.finish(window, total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(size: u32, token: &str) -> PageRequest {
        PageRequest { page_size: size, page_token: token.to_owned() }
    }

    #[test]
    fn defaults_caps_and_offsets() {
        assert_eq!(Page::of(None).unwrap(), Page { offset: 0, size: DEFAULT_SIZE });
        let capped = Page::of(Some(&request(9000, "40"))).unwrap();
        assert_eq!(capped, Page { offset: 40, size: MAX_SIZE });
        assert!(Page::of(Some(&request(10, "not-a-number"))).is_err());
        assert!(Page::of(Some(&request(10, "-1"))).is_err());
    }

    #[test]
    fn pages_walk_to_the_end() {
        let page = Page::of(Some(&request(2, ""))).unwrap();
        let (items, info) = page.slice((0..5).collect::<Vec<_>>());
        assert_eq!((items, info.next_page_token.as_str(), info.total), (vec![0, 1], "2", 5));
        let page = Page::of(Some(&request(2, "4"))).unwrap();
        let (items, info) = page.slice((0..5).collect::<Vec<_>>());
        assert_eq!((items, info.next_page_token.as_str()), (vec![4], ""));
        let (items, info) = Page::of(Some(&request(2, ""))).unwrap().finish(vec![1, 2, 3], 0);
        assert_eq!((items, info.next_page_token.as_str()), (vec![1, 2], "2"));
    }
}
