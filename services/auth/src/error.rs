use ramen_proto::metadata::ErrorReason;
use ramen_store::StoreError;
use tonic::{Code, Status};

use ramen_crypto::seal::SealError;

/// What an auth operation fails with. No variant ever carries a password, token or secret value.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Bad input; the message names the field.
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    /// Wrong email or password (deliberately not saying which).
    #[error("invalid email or password")]
    BadCredentials,
    /// No valid caller: missing actor, unknown user, bad or reused refresh token.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller holds a one-time password: only ChangePassword is allowed.
    #[error("password change required: set a new password first")]
    PasswordChangeRequired,
    /// The caller may see the group but not do this.
    #[error("{0}")]
    Denied(String),
    #[error("{0} not found")]
    NotFound(String),
    /// The group does not exist, or the caller may not learn that it does (the same words).
    #[error("group `{0}` not found")]
    GroupNotFound(String),
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// Optimistic concurrency: the caller's expected version is stale.
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Sealing(#[from] SealError),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("bus: {0}")]
    Bus(#[from] ramen_bus::BusError),
    #[error("{0}")]
    Unavailable(String),
    /// A feature this platform is not set up for (single sign-on without `sso.issuer`).
    #[error("{0}")]
    NotConfigured(String),
}

impl AuthError {
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid { field, reason: reason.into() }
    }

    pub fn group_not_found(group: &str) -> Self {
        Self::GroupNotFound(group.to_owned())
    }
}

impl From<AuthError> for Status {
    fn from(error: AuthError) -> Self {
        let message = error.to_string();
        match error {
            AuthError::Invalid { .. } => Status::invalid_argument(message),
            AuthError::BadCredentials | AuthError::Unauthenticated(_) => {
                Status::unauthenticated(message)
            }
            // The gateway tells this refusal apart by its reason, not its words.
            AuthError::PasswordChangeRequired => {
                ErrorReason::PasswordChangeRequired.attach(Status::failed_precondition(message))
            }
            AuthError::Denied(_) => Status::permission_denied(message),
            AuthError::NotFound(_) | AuthError::GroupNotFound(_) | AuthError::NotConfigured(_) => {
                Status::not_found(message)
            }
            AuthError::AlreadyExists(_) => Status::already_exists(message),
            AuthError::Conflict(_) => Status::aborted(message),
            // Fails closed, and the details stay in the server log.
            AuthError::Sealing(_) => {
                tracing::error!(error = %message, "a sealed secret does not open");
                Status::internal("a sealed secret cannot be opened with the configured keys")
            }
            AuthError::Store(store) => store_status(store),
            AuthError::Bus(_) | AuthError::Unavailable(_) => Status::unavailable(message),
        }
    }
}

fn store_status(error: StoreError) -> Status {
    let code = match &error {
        // A full or read-only disk too: the same call succeeds once the operator mends it.
        StoreError::Unavailable(_) | StoreError::Io(_) => Code::Unavailable,
        StoreError::VersionConflict { .. } => Code::Aborted,
        StoreError::UniqueViolation { .. } | StoreError::AlreadyExists { .. } => {
            Code::AlreadyExists
        }
        StoreError::NotFound { .. } => Code::NotFound,
        StoreError::InvalidName { .. }
        | StoreError::InvalidDocument(_)
        | StoreError::InvalidQuery(_) => Code::InvalidArgument,
        _ => Code::Internal,
    };
    Status::new(code, format!("store: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_unavailable_and_names_its_cause() {
        let full = std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            "/data/ramen-store.redb: No space left on device (os error 28)",
        );
        let status = store_status(StoreError::Io(full));
        assert_eq!(status.code(), Code::Unavailable);
        assert!(status.message().contains("No space left on device"), "{}", status.message());
        let conflict =
            StoreError::UniqueViolation { collection: "users".into(), index: "email".into() };
        assert_eq!(store_status(conflict).code(), Code::AlreadyExists);
    }
}
