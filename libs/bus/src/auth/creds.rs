//! A NATS user's credentials: its JWT and its nkey seed, in the `.creds` text format every
//! NATS client and `nsc` read and write. The seed proves the user's identity to the server;
//! whoever reads it can connect as that user, so it is never printed (`Debug` redacts it).

use std::fmt;
use std::path::Path;

use nkeys::KeyPair;
use serde_json::Value;

use super::{AuthError, jwt};

#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    jwt: String,
    seed: String,
}

const JWT_BEGIN: &str = "-----BEGIN NATS USER JWT-----";

impl Credentials {
    /// Pairs a user JWT with the seed of the user it names; fails when they do not match.
    pub fn new(jwt: String, seed: String) -> Result<Credentials, AuthError> {
        let credentials = Credentials { jwt, seed };
        let key = KeyPair::from_seed(&credentials.seed).map_err(AuthError::key)?;
        if credentials.claims()?["sub"].as_str() != Some(key.public_key().as_str()) {
            return Err(AuthError::Invalid("the seed is not the key of the user the JWT names"));
        }
        Ok(credentials)
    }

    /// `.creds` text: the JWT and the seed, each between its `-----BEGIN` / `END-----` lines.
    pub fn parse(text: &str) -> Result<Credentials, AuthError> {
        let mut blocks = Vec::new();
        let mut lines = text.lines().map(str::trim);
        while let Some(line) = lines.next() {
            if line.starts_with("-----BEGIN") {
                let body = lines.next().unwrap_or_default();
                blocks.push(body.to_owned());
            }
        }
        match blocks.as_slice() {
            [jwt, seed] if !jwt.is_empty() && !seed.is_empty() => {
                Credentials::new(jwt.clone(), seed.clone())
            }
            _ => Err(AuthError::Invalid(
                "not a NATS .creds text (a user JWT block and a user nkey seed block)",
            )),
        }
    }

    /// `value` is the `.creds` text itself when it holds a `-----BEGIN NATS USER JWT-----`
    /// block, else the path of a `.creds` file (what `RAMEN_NATS_CREDS` may be).
    pub fn load(value: &str) -> Result<Credentials, AuthError> {
        if value.contains(JWT_BEGIN) {
            return Credentials::parse(value);
        }
        let path = Path::new(value.trim());
        let text = std::fs::read_to_string(path)
            .map_err(|source| AuthError::Io { path: path.display().to_string(), source })?;
        Credentials::parse(&text).map_err(|err| AuthError::File {
            path: path.display().to_string(),
            reason: err.to_string(),
        })
    }

    /// The `.creds` file text.
    pub fn to_text(&self) -> String {
        format!(
            "{JWT_BEGIN}\n{}\n------END NATS USER JWT------\n\n\
             ************************* IMPORTANT *************************\n\
             NKEY Seed printed below can be used to sign and prove identity.\n\
             NKEYs are sensitive and should be treated as secrets.\n\n\
             -----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n\n\
             *************************************************************\n",
            self.jwt, self.seed
        )
    }

    pub fn jwt(&self) -> &str {
        &self.jwt
    }

    /// The user's name as its JWT gives it (ramen names service users by role).
    pub fn name(&self) -> String {
        self.claims().ok().and_then(|c| c["name"].as_str().map(str::to_owned)).unwrap_or_default()
    }

    /// The account the user belongs to: the account that issued it through a signing key
    /// (`issuer_account`), or the account key that signed it directly.
    pub fn account(&self) -> Result<String, AuthError> {
        let claims = self.claims()?;
        let account = claims["nats"]["issuer_account"].as_str().or(claims["iss"].as_str());
        account.map(str::to_owned).ok_or(AuthError::Invalid("the user JWT names no account"))
    }

    fn claims(&self) -> Result<Value, AuthError> {
        jwt::decode(&self.jwt)
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.name())
            .field("seed", &"<redacted>")
            .finish()
    }
}
