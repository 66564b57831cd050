//! The key set of one ramen bus in operator mode: the operator, the system account, the ramen
//! account (JetStream on) and its scoped node signing key, each an nkey seed kept in a
//! directory (`<data_dir>/keys/nats` for `ramen up`, `ramen nats-auth init --out DIR`
//! elsewhere). Everything else — the server's operator configuration, the account JWTs and
//! every service's credentials — is derived from the seeds, so it is written again on every
//! start and a new ramen's permission table applies without any step.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use hmac::{Hmac, Mac};
use nkeys::{KeyPair, KeyPairType};
use sha2::Sha256;

use super::jwt::{self, Permissions};
use super::node::{NodeMinter, node_scope};
use super::roles::{BusNames, Role};
use super::{AuthError, Credentials};

/// Seed files of a key set, by key.
const OPERATOR_FILE: &str = "operator.nk";
const SYSTEM_FILE: &str = "system-account.nk";
const ACCOUNT_FILE: &str = "account.nk";
/// The node signing key: the one secret the zone-manager needs besides its own credentials.
pub const NODE_SIGNING_FILE: &str = "node-signing.nk";
/// The server's operator configuration, to `include` (it holds no secret).
pub const SERVER_CONFIG_FILE: &str = "server-auth.conf";

/// The server's largest accepted protocol line, in bytes (a CONNECT carries the user JWT).
pub const MAX_CONTROL_LINE: usize = 32 * 1024;

/// Name of the ramen account (shown in the server's monitoring).
pub const ACCOUNT_NAME: &str = "RAMEN";

pub struct AuthKeys {
    operator: KeyPair,
    system: KeyPair,
    account: KeyPair,
    nodes: KeyPair,
}

impl AuthKeys {
    pub fn generate() -> AuthKeys {
        AuthKeys {
            operator: KeyPair::new_operator(),
            system: KeyPair::new_account(),
            account: KeyPair::new_account(),
            nodes: KeyPair::new_account(),
        }
    }

    /// The key set in `dir`, generated there on first use (directory 0700, seed files 0600);
    /// a partial set (some seeds missing) is refused rather than completed, since a new
    /// operator or account would orphan everything issued before.
    pub fn load_or_generate(dir: &Path) -> Result<AuthKeys, AuthError> {
        let io = |source| AuthError::Io { path: dir.display().to_string(), source };
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(io)?;
        let files = [OPERATOR_FILE, SYSTEM_FILE, ACCOUNT_FILE, NODE_SIGNING_FILE];
        let present: Vec<&str> = files.into_iter().filter(|f| dir.join(f).exists()).collect();
        if present.is_empty() {
            let keys = AuthKeys::generate();
            for (file, key) in files.into_iter().zip(keys.pairs()) {
                write_secret(&dir.join(file), &key.seed().map_err(AuthError::key)?)?;
            }
            return Ok(keys);
        }
        if present.len() != files.len() {
            let missing: Vec<&str> = files.into_iter().filter(|f| !present.contains(f)).collect();
            return Err(AuthError::File {
                path: dir.display().to_string(),
                reason: format!("holds some NATS keys but not {}", missing.join(", ")),
            });
        }
        let read = |file: &str, kind: KeyPairType| read_seed(&dir.join(file), kind);
        Ok(AuthKeys {
            operator: read(OPERATOR_FILE, KeyPairType::Operator)?,
            system: read(SYSTEM_FILE, KeyPairType::Account)?,
            account: read(ACCOUNT_FILE, KeyPairType::Account)?,
            nodes: read(NODE_SIGNING_FILE, KeyPairType::Account)?,
        })
    }

    fn pairs(&self) -> [&KeyPair; 4] {
        [&self.operator, &self.system, &self.account, &self.nodes]
    }

    /// The ramen account's public key (its JetStream store is under this name).
    pub fn account(&self) -> String {
        self.account.public_key()
    }

    /// The node signing key's seed (`nats.signing_key`, for the zone-manager).
    pub fn node_signing_seed(&self) -> Result<String, AuthError> {
        self.nodes.seed().map_err(AuthError::key)
    }

    pub fn node_minter(&self) -> Result<NodeMinter, AuthError> {
        NodeMinter::new(&self.node_signing_seed()?, &self.account())
    }

    /// `(public key, JWT)` of the system account and the ramen account.
    pub fn account_jwts(&self) -> Result<[(String, String); 2], AuthError> {
        let system = jwt::account(&self.operator, &self.system, "SYS", false, &[])?;
        let scoped = [node_scope(&self.nodes)];
        let ramen = jwt::account(&self.operator, &self.account, ACCOUNT_NAME, true, &scoped)?;
        Ok([(self.system.public_key(), system), (self.account(), ramen)])
    }

    pub fn operator_jwt(&self) -> Result<String, AuthError> {
        jwt::operator(&self.operator, "ramen", &self.system.public_key())
    }

    /// nats-server configuration for operator mode: the operator, the system account and
    /// both account JWTs preloaded into the memory resolver. Public claims only.
    pub fn server_config(&self) -> Result<String, AuthError> {
        let [system, ramen] = self.account_jwts()?;
        Ok(format!(
            "# NATS operator mode for ramen (written by ramen; `ramen nats-auth init` explains\n\
             # it). Only signed public claims: no secret. Include it from the server's config.\n\
             operator: \"{}\"\n\
             system_account: \"{}\"\n\
             resolver: MEMORY\n\
             resolver_preload: {{\n  \"{}\": \"{}\"\n  \"{}\": \"{}\"\n}}\n\
             # A client's CONNECT carries its user JWT; the control-plane user's (`ramen up`:\n\
             # every service's permissions) is larger than the default 4 KiB limit.\n\
             max_control_line: {MAX_CONTROL_LINE}\n",
            self.operator_jwt()?,
            system.0,
            system.0,
            system.1,
            ramen.0,
            ramen.1
        ))
    }

    /// The credentials of a service user, with its role's permissions.
    pub fn credentials(&self, role: Role, names: &BusNames) -> Result<Credentials, AuthError> {
        self.user(role.name(), &role.permissions(names))
    }

    /// The credentials of a user named `name` with `permissions`, in the ramen account. Its
    /// key is derived from the account key and the name, so issuing it again gives the same
    /// user.
    pub fn user(&self, name: &str, permissions: &Permissions) -> Result<Credentials, AuthError> {
        let (_, account_seed) = nkeys::decode_seed(&self.account.seed().map_err(AuthError::key)?)
            .map_err(AuthError::key)?;
        let mut mac = Hmac::<Sha256>::new_from_slice(&account_seed).map_err(AuthError::key)?;
        mac.update(format!("ramen service user\0{name}").as_bytes());
        let raw: [u8; 32] = mac.finalize().into_bytes().into();
        let user = KeyPair::new_from_raw(KeyPairType::User, raw).map_err(AuthError::key)?;
        let token = jwt::user(&self.account, &user.public_key(), name, permissions)?;
        Credentials::new(token, user.seed().map_err(AuthError::key)?)
    }
}

/// Writes a secret file with mode 0600 (created so, never widened in between).
pub(crate) fn write_secret(path: &Path, text: &str) -> Result<(), AuthError> {
    let io = |source| AuthError::Io { path: path.display().to_string(), source };
    let tmp = path.with_extension("tmp");
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    fs::rename(&tmp, path).map_err(io)
}

fn read_seed(path: &Path, kind: KeyPairType) -> Result<KeyPair, AuthError> {
    let text = fs::read_to_string(path)
        .map_err(|source| AuthError::Io { path: path.display().to_string(), source })?;
    let key = KeyPair::from_seed(text.trim()).map_err(|err| AuthError::File {
        path: path.display().to_string(),
        reason: format!("not an nkey seed: {err}"),
    })?;
    if key.key_pair_type() != kind {
        return Err(AuthError::File {
            path: path.display().to_string(),
            reason: format!("holds a {:?} key, expected {kind:?}", key.key_pair_type()),
        });
    }
    Ok(key)
}
