//! The request's page (`ramen_service::paging`, the one page type of every service).

use ramen_proto::common::v1::PageRequest;
pub use ramen_service::paging::Page;

use crate::error::Error;

pub fn page(request: Option<&PageRequest>) -> Result<Page, Error> {
    Page::of(request).map_err(|bad| Error::invalid("page.page_token", bad.to_string()))
}
