//! `Debug` for the messages that carry a password, token, key or secret value (build.rs skips
//! their derived `Debug`). A request logged with `?request` or inside an error then shows
//! `<redacted>` for a set secret and `""` for an empty one, never the value.

use std::any::type_name;
use std::fmt;

use crate::{auth::v1 as auth, deployer::v1 as deployer, zone::v1 as zone};

/// A secret-bearing field: only whether it is set may be shown.
trait SecretField {
    fn is_set(&self) -> bool;
}

impl SecretField for String {
    fn is_set(&self) -> bool {
        !self.is_empty()
    }
}

impl SecretField for Option<String> {
    fn is_set(&self) -> bool {
        self.is_some()
    }
}

struct Hidden<'a, T>(&'a T);

impl<T: SecretField> fmt::Debug for Hidden<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_set() { "<redacted>" } else { "\"\"" })
    }
}

fn short_name<T>() -> &'static str {
    type_name::<T>().rsplit("::").next().unwrap_or("Message")
}

macro_rules! redacted_debug {
    ($($ty:ty { $($shown:ident),* } hide { $($hidden:ident),+ })*) => {
        $(
            impl fmt::Debug for $ty {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.debug_struct(short_name::<Self>())
                        $(.field(stringify!($shown), &self.$shown))*
                        $(.field(stringify!($hidden), &Hidden(&self.$hidden)))+
                        .finish()
                }
            }
        )*
    };
}

redacted_debug! {
    auth::LoginRequest { email, client_addr } hide { password }
    auth::TokenPair { access_expires_at, refresh_expires_at } hide { access_token, refresh_token }
    auth::RefreshRequest { client_addr } hide { refresh_token }
    auth::LogoutRequest {} hide { refresh_token }
    auth::ChangePasswordRequest { user_id } hide { current_password, new_password }
    auth::VerifyAccessTokenRequest {} hide { access_token }
    auth::StartSsoResponse {} hide { authorization_url, state }
    auth::FinishSsoRequest { iss, error, error_description, client_addr } hide { state, code }
    auth::FinishSsoResponse { session, error } hide { redirect }
    auth::RedeemSsoCodeRequest { client_addr } hide { code, code_verifier }
    auth::CreateUserRequest { email, super_admin } hide { password }
    auth::CreateUserResponse { user } hide { one_time_password }
    auth::CreateMcpKeyResponse { key } hide { plaintext }
    auth::SetSecretRequest { group, name, scope } hide { value }
    auth::ResolvedSecret { name, scope } hide { value }
    deployer::UpdateSettingsRequest {
        github_app_id, auto_rebalance_enabled, auto_rebalance_interval_seconds
    } hide { github_app_private_key }
    zone::NodeSecret { name } hide { value }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "hunter2-very-secret";

    #[test]
    fn debug_never_prints_secret_values() {
        let printed = [
            format!("{:?}", auth::LoginRequest { password: SECRET.into(), ..Default::default() }),
            format!(
                "{:?}",
                auth::TokenPair {
                    access_token: SECRET.into(),
                    refresh_token: SECRET.into(),
                    ..Default::default()
                }
            ),
            format!("{:?}", auth::SetSecretRequest { value: SECRET.into(), ..Default::default() }),
            format!("{:?}", auth::ResolvedSecret { value: SECRET.into(), ..Default::default() }),
            format!(
                "{:?}",
                auth::CreateMcpKeyResponse { plaintext: SECRET.into(), ..Default::default() }
            ),
            format!(
                "{:?}",
                deployer::UpdateSettingsRequest {
                    github_app_private_key: Some(SECRET.into()),
                    ..Default::default()
                }
            ),
            format!("{:?}", zone::NodeSecret { name: "API".into(), value: SECRET.into() }),
            format!("{:?}", auth::FinishSsoRequest { code: SECRET.into(), ..Default::default() }),
            format!(
                "{:?}",
                auth::RedeemSsoCodeRequest { code_verifier: SECRET.into(), ..Default::default() }
            ),
            format!(
                "{:?}",
                auth::FinishSsoResponse {
                    redirect: format!("http://127.0.0.1:1/callback?code={SECRET}"),
                    ..Default::default()
                }
            ),
        ];
        for line in &printed {
            assert!(!line.contains(SECRET), "secret leaked: {line}");
            assert!(line.contains("<redacted>"), "secret field missing: {line}");
        }
    }

    #[test]
    fn debug_shows_the_non_secret_fields_and_empty_secrets() {
        let request = auth::SetSecretRequest {
            group: "team-a".into(),
            name: "GITHUB_TOKEN".into(),
            ..Default::default()
        };
        let printed = format!("{request:?}");
        assert!(printed.starts_with("SetSecretRequest {"), "{printed}");
        assert!(printed.contains("\"GITHUB_TOKEN\"") && printed.contains("\"team-a\""));
        assert!(printed.contains("value: \"\""), "{printed}");
    }
}
