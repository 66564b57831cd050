use axum::http::Request;

use super::*;

fn parts(method: Method, uri: &str, headers: &[(&str, &str)]) -> Parts {
    let mut builder = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(()).unwrap().into_parts().0
}

#[test]
fn tokens_come_from_the_header_then_the_cookie_then_t_on_streaming_routes_only() {
    let bearer = parts(
        Method::GET,
        "/api/x",
        &[("authorization", "Bearer abc"), ("cookie", "ramen_access=def")],
    );
    assert_eq!(presented_token(&bearer, false).unwrap(), Some(("abc".into(), Via::Bearer)));
    let cookie = parts(Method::GET, "/api/x", &[("cookie", "a=b; ramen_access=def; c=d")]);
    assert_eq!(presented_token(&cookie, false).unwrap(), Some(("def".into(), Via::Cookie)));
    let query = parts(Method::GET, "/api/x?follow=1&t=ghi", &[]);
    assert_eq!(presented_token(&query, true).unwrap(), Some(("ghi".into(), Via::Query)));
    let refused = presented_token(&query, false).unwrap_err();
    assert_eq!((refused.status.as_u16(), refused.code), (401, "unauthenticated"));
    let basic = parts(Method::GET, "/api/x", &[("authorization", "Basic Zm9vOmJhcg==")]);
    assert_eq!(presented_token(&basic, false).unwrap_err().status.as_u16(), 401);
    assert_eq!(presented_token(&parts(Method::GET, "/api/x", &[]), false).unwrap(), None);
}

#[test]
fn cookie_sessions_need_the_csrf_header_to_change_state() {
    let with = |method: Method, header: Option<&str>| {
        let mut headers = vec![("cookie", "ramen_access=t; ramen_csrf=s3cret")];
        if let Some(value) = header {
            headers.push((CSRF_HEADER, value));
        }
        parts(method, "/api/x", &headers)
    };
    assert!(check_csrf(&with(Method::GET, None), Via::Cookie).is_ok(), "reads need none");
    assert!(check_csrf(&with(Method::POST, Some("s3cret")), Via::Cookie).is_ok());
    for (method, header) in
        [(Method::POST, None), (Method::DELETE, Some("wrong")), (Method::PUT, Some(""))]
    {
        let err = check_csrf(&with(method.clone(), header), Via::Cookie).unwrap_err();
        assert_eq!((err.status.as_u16(), err.code), (403, "csrf"), "{method} {header:?}");
    }
    assert!(
        check_csrf(&with(Method::POST, None), Via::Bearer).is_ok(),
        "a header token is not ambient"
    );
}

#[test]
fn session_cookies_are_http_only_strict_and_secure_when_asked() {
    let cookies = session_cookies(true, ("acc", 900), ("ref", 3600), "csrf");
    let access = cookies[0].to_str().unwrap();
    assert!(
        access.starts_with("ramen_access=acc;")
            && access.contains("HttpOnly")
            && access.contains("Secure")
    );
    assert!(access.contains("SameSite=Strict") && access.contains("Max-Age=900"));
    let csrf = cookies[2].to_str().unwrap();
    assert!(!csrf.contains("HttpOnly"), "the console reads it");
    let plain = session_cookies(false, ("acc", 900), ("ref", 3600), "csrf");
    assert!(!plain[0].to_str().unwrap().contains("Secure"));
    assert!(cleared_cookies(false)[0].to_str().unwrap().contains("Max-Age=0"));
}
