//! NATS JWTs (the v2 claim format of `nats-io/jwt`), signed with nkeys: what an operator-mode
//! server trusts. Only the claims ramen issues are modelled — operator, account (with
//! JetStream limits and a scoped signing key) and user — and only the fields it sets; the
//! server ignores what is absent.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use nkeys::KeyPair;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha512_256};

use super::AuthError;

/// Subject allow/deny lists, as NATS applies them: an empty `allow` allows everything, so a
/// role that may do nothing on one side says so with `deny: [">"]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl Rule {
    pub fn allow(subjects: Vec<String>) -> Rule {
        Rule { allow: subjects, deny: Vec::new() }
    }

    pub fn nothing() -> Rule {
        Rule { allow: Vec::new(), deny: vec![">".to_owned()] }
    }
}

/// What one user may publish and subscribe to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permissions {
    #[serde(rename = "pub")]
    pub publish: Rule,
    #[serde(rename = "sub")]
    pub subscribe: Rule,
}

/// A signing key of the account whose users get `template` whatever their JWT says (the
/// server applies it, expanding `{{tag(name)}}` from the user's `name:value` tags). Whoever
/// holds its seed can only mint users inside the template.
#[derive(Clone, Debug)]
pub struct ScopedKey {
    pub key: String,
    pub role: String,
    pub template: Permissions,
    /// Largest message such a user may publish, in bytes.
    pub max_payload: i64,
}

/// Signs `claims` (everything but `iss`, `jti` and `iat`) with `issuer`: the JWT string.
/// `iat` is left out, so the same claims signed by the same key give the same token (ed25519
/// signatures are deterministic): a node config rendered twice does not change.
pub fn sign(mut claims: Value, issuer: &KeyPair) -> Result<String, AuthError> {
    let object = claims.as_object_mut().ok_or(AuthError::Invalid("claims must be an object"))?;
    object.insert("iss".into(), Value::String(issuer.public_key()));
    object.remove("jti");
    let id = Sha512_256::digest(serde_json::to_vec(&claims)?);
    let id = data_encoding::BASE32_NOPAD.encode(&id);
    claims["jti"] = Value::String(id);
    let header = B64.encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let body = B64.encode(serde_json::to_vec(&claims)?);
    let signed = format!("{header}.{body}");
    let signature = issuer.sign(signed.as_bytes()).map_err(AuthError::key)?;
    Ok(format!("{signed}.{}", B64.encode(signature)))
}

/// The claims of a JWT, after checking its signature against its `iss`.
pub fn decode(token: &str) -> Result<Value, AuthError> {
    let mut parts = token.trim().split('.');
    let (Some(header), Some(body), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::Invalid("a JWT has three dot-separated parts"));
    };
    let claims: Value = serde_json::from_slice(&B64.decode(body).map_err(AuthError::base64)?)?;
    let issuer = claims["iss"].as_str().ok_or(AuthError::Invalid("the JWT has no `iss`"))?;
    let key = KeyPair::from_public_key(issuer).map_err(AuthError::key)?;
    let signature = B64.decode(signature).map_err(AuthError::base64)?;
    key.verify(format!("{header}.{body}").as_bytes(), &signature)
        .map_err(|_| AuthError::Invalid("the JWT's signature does not match its issuer"))?;
    Ok(claims)
}

/// The operator: the root every account JWT is checked against.
pub fn operator(operator: &KeyPair, name: &str, system_account: &str) -> Result<String, AuthError> {
    let claims = json!({
        "sub": operator.public_key(),
        "name": name,
        "nats": { "system_account": system_account, "type": "operator", "version": 2 },
    });
    sign(claims, operator)
}

/// An account. `jetstream` turns JetStream on for it (unlimited storage, streams and
/// consumers: the server's own limits still apply); without it, JetStream is off for every
/// user of the account. `scoped` keys are listed with their templates.
pub fn account(
    operator: &KeyPair,
    account: &KeyPair,
    name: &str,
    jetstream: bool,
    scoped: &[ScopedKey],
) -> Result<String, AuthError> {
    let mut limits = json!({
        "subs": -1, "data": -1, "payload": -1,
        "imports": -1, "exports": -1, "wildcards": true, "conn": -1, "leaf": -1,
    });
    if jetstream {
        for key in ["mem_storage", "disk_storage", "streams", "consumer"] {
            limits[key] = json!(-1);
        }
    }
    let signing_keys: Vec<Value> = scoped
        .iter()
        .map(|scope| {
            let mut template = serde_json::to_value(&scope.template)?;
            template["subs"] = json!(-1);
            template["data"] = json!(-1);
            template["payload"] = json!(scope.max_payload);
            Ok(json!({
                "kind": "user_scope",
                "key": scope.key,
                "role": scope.role,
                "template": template,
                "description": "",
            }))
        })
        .collect::<Result<_, serde_json::Error>>()?;
    let mut nats = json!({ "limits": limits, "type": "account", "version": 2 });
    if !signing_keys.is_empty() {
        nats["signing_keys"] = Value::Array(signing_keys);
    }
    sign(json!({ "sub": account.public_key(), "name": name, "nats": nats }), operator)
}

/// A user with explicit permissions, signed by its account's own key.
pub fn user(
    account: &KeyPair,
    user: &str,
    name: &str,
    permissions: &Permissions,
) -> Result<String, AuthError> {
    let mut nats = serde_json::to_value(permissions)?;
    for key in ["subs", "data", "payload"] {
        nats[key] = json!(-1);
    }
    nats["type"] = json!("user");
    nats["version"] = json!(2);
    sign(json!({ "sub": user, "name": name, "nats": nats }), account)
}

/// A user of a scoped signing key: no permissions of its own (the server takes the key's
/// template), only the tags the template reads.
pub fn scoped_user(
    signing_key: &KeyPair,
    issuer_account: &str,
    user: &str,
    name: &str,
    tags: &[String],
) -> Result<String, AuthError> {
    let nats = json!({
        "issuer_account": issuer_account,
        "tags": tags,
        "type": "user",
        "version": 2,
    });
    sign(json!({ "sub": user, "name": name, "nats": nats }), signing_key)
}
