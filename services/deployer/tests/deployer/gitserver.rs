//! A private git server for tests: `git http-backend` (smart HTTP) behind a tiny axum server
//! that answers 401 unless the request carries Basic credentials with the expected token.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri};
use base64::Engine;
use tokio::io::AsyncWriteExt;

pub struct GitServer {
    pub url: String,
    _root: tempfile::TempDir,
    _task: tokio::task::JoinHandle<()>,
}

impl GitServer {
    /// Serves a bare copy of `repo` as `/<name>.git`, requiring `token` as the password.
    pub async fn start(repo: &Path, name: &str, token: &str) -> GitServer {
        let root = tempfile::tempdir().unwrap();
        let bare = root.path().join(format!("{name}.git"));
        let out = std::process::Command::new("git")
            .arg("clone")
            .arg("--quiet")
            .arg("--bare")
            .arg(repo)
            .arg(&bare)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let project_root = root.path().to_owned();
        let token = token.to_owned();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let (project_root, token) = (project_root.clone(), token.clone());
                async move { serve(project_root, &token, method, uri, headers, body).await }
            },
        );
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        GitServer {
            url: format!("http://127.0.0.1:{}/{name}.git", addr.port()),
            _root: root,
            _task: task,
        }
    }
}

fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get("authorization").and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some(encoded) = value.strip_prefix("Basic ") else { return false };
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
        return false;
    };
    String::from_utf8_lossy(&decoded).split_once(':').is_some_and(|(_, password)| password == token)
}

async fn serve(
    root: PathBuf,
    token: &str,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    if !authorized(&headers, token) {
        return Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header("www-authenticate", "Basic realm=\"git\"")
            .body(Body::empty())
            .unwrap();
    }
    let header =
        |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let mut child = tokio::process::Command::new("git")
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", &root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", method.as_str())
        .env("PATH_INFO", uri.path())
        .env("QUERY_STRING", uri.query().unwrap_or(""))
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_USER", "x-access-token")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&body).await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    cgi_response(&output.stdout)
}

/// A CGI answer (headers, blank line, body) as an HTTP response.
fn cgi_response(raw: &[u8]) -> Response<Body> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| raw.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let Some((at, gap)) = split else {
        return Response::builder().status(500).body(Body::empty()).unwrap();
    };
    let mut response = Response::builder().status(200);
    for line in String::from_utf8_lossy(&raw[..at]).lines() {
        let Some((name, value)) = line.split_once(':') else { continue };
        if name.eq_ignore_ascii_case("status") {
            let code: u16 = value.trim().split(' ').next().unwrap_or("200").parse().unwrap_or(200);
            response = response.status(code);
        } else {
            response = response.header(name.trim(), value.trim());
        }
    }
    response.body(Body::from(raw[at + gap..].to_vec())).unwrap()
}
