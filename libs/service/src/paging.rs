//! Offset paging, as every service's list RPC reads a [`PageRequest`]: `page_size` 0 asks for
//! the service's default, larger sizes are capped, and `page_token` is the offset of the next
//! page, a number this server issued.

use ramen_proto::common::v1::PageRequest;

/// A page request made concrete: skip `offset` items, return up to `size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageWindow {
    pub offset: u64,
    pub size: u64,
}

/// A `page_token` this server did not issue.
#[derive(Debug, thiserror::Error)]
#[error("not a token this server issued")]
pub struct BadPageToken;

impl PageWindow {
    pub fn of(request: Option<&PageRequest>, default: u64, max: u64) -> Result<Self, BadPageToken> {
        let (size, token) = request.map_or((0, ""), |r| (r.page_size, r.page_token.as_str()));
        let size = match u64::from(size) {
            0 => default,
            n => n.min(max),
        };
        let offset = if token.is_empty() { 0 } else { token.parse().map_err(|_| BadPageToken)? };
        Ok(Self { offset, size })
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
        assert_eq!(PageWindow::of(None, 100, 500).unwrap(), PageWindow { offset: 0, size: 100 });
        let capped = PageWindow::of(Some(&request(9000, "40")), 100, 500).unwrap();
        assert_eq!(capped, PageWindow { offset: 40, size: 500 });
        assert!(PageWindow::of(Some(&request(10, "not-a-number")), 100, 500).is_err());
        assert!(PageWindow::of(Some(&request(10, "-1")), 100, 500).is_err());
    }
}
