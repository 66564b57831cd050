//! `ramen login --sso`: single sign-on from a terminal. The CLI listens on a loopback port
//! (RFC 8252), opens the browser at ramen's `/api/auth/sso/start` with that port and the S256
//! challenge of a verifier only it holds; the person signs in at the provider; ramen sends the
//! browser to the loopback with a one-time code; the CLI trades code and verifier for a
//! session. Another local process that reads the code off the loopback cannot redeem it.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::api::{Api, Failure, Outcome};
use super::exit;
use super::output::{print, say};

/// How long the person has to sign in.
const WAIT: Duration = Duration::from_secs(300);

pub async fn login(api: &mut Api, open_browser: bool, json: bool) -> Outcome<()> {
    let options = api.call(Method::GET, "/api/auth/sso", None).await?;
    if options["enabled"].as_bool() != Some(true) {
        return Err(Failure::new(
            exit::NOT_FOUND,
            format!(
                "single sign-on is not configured at {}: log in with an email",
                api.credentials.api_url
            ),
        ));
    }
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| {
        Failure::new(exit::FAILURE, format!("cannot listen on a loopback port: {e}"))
    })?;
    let port =
        listener.local_addr().map_err(|e| Failure::new(exit::FAILURE, e.to_string()))?.port();
    let verifier = ramen_oidc_login::random_token();
    let query = ramen_oidc_login::url_form(&[
        ("cli_port", &port.to_string()),
        ("code_challenge", &ramen_oidc_login::challenge(&verifier)),
    ]);
    let url = api.url(&format!("/api/auth/sso/start?{query}"));
    eprintln!("Open this URL in a browser to sign in:\n  {url}");
    if open_browser {
        open(&url);
    }
    let code = tokio::time::timeout(WAIT, callback(&listener))
        .await
        .map_err(|_| Failure::new(exit::DENIED, "no sign-in came back within 5 minutes"))??;
    let body = json!({ "code": code, "code_verifier": verifier });
    let session = api.call(Method::POST, "/api/auth/sso/token", Some(&body)).await?;
    api.remember(&session)?;
    let email = session["user"]["email"].as_str().unwrap_or_default().to_owned();
    say(json, &format!("Signed in as {email} at {}", api.credentials.api_url));
    if json {
        print(&json!({ "api_url": api.credentials.api_url, "email": email }), true, &[]);
    }
    Ok(())
}

/// The browser's visit to `/callback`: the code, or the reason the sign-in failed. Other
/// requests (a favicon) get a 404 and the wait goes on.
async fn callback(listener: &TcpListener) -> Outcome<String> {
    loop {
        let (mut stream, _) =
            listener.accept().await.map_err(|e| Failure::new(exit::FAILURE, e.to_string()))?;
        let mut buffer = vec![0u8; 8192];
        let mut read = 0;
        // The request line and headers; the body (there is none) is not read.
        while read < buffer.len() && !buffer[..read].windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buffer[read..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
        let head = String::from_utf8_lossy(&buffer[..read]);
        let target =
            head.lines().next().and_then(|line| line.split(' ').nth(1)).unwrap_or_default();
        let Some(query) = target.strip_prefix("/callback?") else {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        };
        let param = |name: &str| {
            query.split('&').find_map(|pair| {
                let (key, value) = pair.split_once('=')?;
                (key == name).then(|| percent_decode(value))
            })
        };
        let (page, outcome) = match (param("code"), param("error")) {
            (Some(code), _) if !code.is_empty() => (
                "Signed in. You can close this tab and go back to the terminal.".to_owned(),
                Ok(code),
            ),
            (_, error) => {
                let error = error.unwrap_or_else(|| "the callback carried no code".into());
                (
                    format!("Sign-in failed: {error}"),
                    Err(Failure::new(exit::DENIED, format!("single sign-on failed: {error}"))),
                )
            }
        };
        let html = format!(
            "<!doctype html><meta charset=utf-8><title>ramen</title><p>{}</p>",
            page.replace('&', "&amp;").replace('<', "&lt;")
        );
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
            html.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        return outcome;
    }
}

/// `%XX` and `+` of a query value.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes.get(i..i + 3) {
            Some([b'%', high, low]) => hex(*high).zip(hex(*low)).map(|(h, l)| h * 16 + l),
            _ => None,
        };
        match (escaped, bytes[i]) {
            (Some(byte), _) => {
                out.push(byte);
                i += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                i += 1;
            }
            (None, other) => {
                out.push(other);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Opens `url` in the person's browser, if the desktop says how; the URL is printed anyway.
fn open(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        eprintln!("(could not start a browser: open the URL yourself)");
    }
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn query_values_are_decoded() {
        assert_eq!(percent_decode("a%20b+c%2F"), "a b c/");
        assert_eq!(percent_decode("50%"), "50%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
