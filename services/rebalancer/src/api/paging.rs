//! Offset paging: the token is the offset of the next page, as a number this server issued.

use ramen_proto::common::v1::{PageInfo, PageRequest};
use ramen_service::paging::PageWindow;

use crate::error::Error;

const DEFAULT_PAGE: u64 = 100;
const MAX_PAGE: u64 = 1000;

pub struct Page {
    pub offset: u64,
    pub size: u64,
}

impl Page {
    pub fn from_request(request: Option<&PageRequest>) -> Result<Self, Error> {
        let window = PageWindow::of(request, DEFAULT_PAGE, MAX_PAGE)
            .map_err(|bad| Error::invalid("page.page_token", bad.to_string()))?;
        Ok(Self { offset: window.offset, size: window.size })
    }

    /// The page out of everything (`total` known).
    pub fn slice<T>(&self, items: Vec<T>, total: u64) -> (Vec<T>, PageInfo) {
        let items: Vec<T> =
            items.into_iter().skip(self.offset as usize).take(self.size as usize + 1).collect();
        let (items, mut info) = self.finish(items);
        info.total = total;
        (items, info)
    }

    /// Trims a page read with one look-ahead item and says where the next page starts.
    pub fn finish<T>(&self, mut items: Vec<T>) -> (Vec<T>, PageInfo) {
        let more = items.len() as u64 > self.size;
        items.truncate(self.size as usize);
        let next_page_token =
            if more { (self.offset + self.size).to_string() } else { String::new() };
        (items, PageInfo { next_page_token, total: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_walk_to_the_end() {
        let page =
            Page::from_request(Some(&PageRequest { page_size: 2, page_token: String::new() }))
                .unwrap();
        let (items, info) = page.slice((0..5).collect::<Vec<_>>(), 5);
        assert_eq!((items, info.next_page_token.as_str(), info.total), (vec![0, 1], "2", 5));
        let page = Page::from_request(Some(&PageRequest { page_size: 2, page_token: "4".into() }))
            .unwrap();
        let (items, info) = page.slice((0..5).collect::<Vec<_>>(), 5);
        assert_eq!((items, info.next_page_token.as_str()), (vec![4], ""));
        assert!(
            Page::from_request(Some(&PageRequest { page_size: 1, page_token: "x".into() }))
                .is_err()
        );
    }
}
