//! A REST client that refreshes an expired access token once, and turns error answers
//! (`{"error":{"code","message","details"}}`) into a message and an exit code.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::credentials::{self, Credentials};
use super::exit;

pub struct Api {
    http: reqwest::Client,
    pub credentials: Credentials,
}

/// A failed command: what to print and how to exit.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

pub type Outcome<T> = Result<T, Failure>;

fn code_for(status: StatusCode) -> u8 {
    match status.as_u16() {
        400 | 422 => exit::USAGE,
        401 | 403 => exit::DENIED,
        404 => exit::NOT_FOUND,
        409 | 412 => exit::CONFLICT,
        429 | 500..=599 => exit::UNAVAILABLE,
        _ => exit::FAILURE,
    }
}

impl Api {
    /// With the stored login; `api_url` (flag or `RAMEN_API`) overrides the stored URL.
    pub fn new(api_url: Option<String>) -> Self {
        let mut credentials = credentials::load().unwrap_or_default();
        if let Some(url) = api_url
            && url != credentials.api_url
        {
            credentials = Credentials { api_url: url, ..Default::default() };
        }
        if credentials.api_url.is_empty() {
            credentials.api_url = "http://127.0.0.1:8080".into();
        }
        credentials.api_url = credentials.api_url.trim_end_matches('/').to_owned();
        Self { http: reqwest::Client::new(), credentials }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.credentials.api_url)
    }

    /// Sends a request; on 401 with a stored refresh token, refreshes once and retries.
    pub async fn call(
        &mut self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Outcome<Value> {
        let first = self.send(method.clone(), path, body).await?;
        let response = if first.status() == StatusCode::UNAUTHORIZED
            && !self.credentials.refresh_token.is_empty()
        {
            self.refresh().await?;
            self.send(method, path, body).await?
        } else {
            first
        };
        let status = response.status();
        let text =
            response.text().await.map_err(|e| Failure::new(exit::UNAVAILABLE, e.to_string()))?;
        let value: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if status.is_success() {
            return Ok(value);
        }
        let message = value["error"]["message"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("HTTP {status}: {value}"));
        let hint = if status == StatusCode::UNAUTHORIZED { " (run `ramen login`)" } else { "" };
        Err(Failure::new(code_for(status), format!("{message}{hint}")))
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Outcome<reqwest::Response> {
        let mut request = self.http.request(method, self.url(path));
        if !self.credentials.access_token.is_empty() {
            request = request.bearer_auth(&self.credentials.access_token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        request.send().await.map_err(|e| {
            Failure::new(
                exit::UNAVAILABLE,
                format!("cannot reach ramen at {}: {e}", self.credentials.api_url),
            )
        })
    }

    async fn refresh(&mut self) -> Outcome<()> {
        let body = serde_json::json!({ "refresh_token": self.credentials.refresh_token });
        let response = self.send(Method::POST, "/api/auth/refresh", Some(&body)).await?;
        if !response.status().is_success() {
            return Err(Failure::new(exit::DENIED, "your login expired; run `ramen login`"));
        }
        let session: Value =
            response.json().await.map_err(|e| Failure::new(exit::FAILURE, e.to_string()))?;
        self.remember(&session)
    }

    /// Stores the tokens of a login or refresh answer.
    pub fn remember(&mut self, session: &Value) -> Outcome<()> {
        self.credentials.access_token =
            session["access_token"].as_str().unwrap_or_default().to_owned();
        self.credentials.refresh_token =
            session["refresh_token"].as_str().unwrap_or_default().to_owned();
        if let Some(email) = session["user"]["email"].as_str() {
            self.credentials.email = email.to_owned();
        }
        credentials::save(&self.credentials)
            .map_err(|e| Failure::new(exit::FAILURE, format!("cannot store the login: {e}")))
    }
}
