//! How an environment's MCP clients authenticate and who may call what:
//! `PUT /api/groups/{group}/environments/{env}/auth` (group admins), shown as `auth` in every
//! environment view. The deployer checks it (each refusal names the field), keeps it, and
//! pushes it to the environment's running nodes at once; the edge reads it with the
//! environment. The audit log records who changed it.

use axum::Json;
use axum::extract::{Path, State};
use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1::{CallRule, McpAuth, McpAuthMode};
use ramen_proto::deployer::v1 as pb;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::deploy_views::EnvironmentView;
use super::{Route, route};
use crate::access::Access;
use crate::caller::Authed;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::Body;
use crate::state::Gateway;

pub(super) fn routes() -> Vec<Route> {
    vec![route(Access::GroupAdmin(Action::ManageEnvironments), routes!(set_environment_auth))]
}

/// An authentication mode: `keys` (MCP keys), `oauth` (OAuth 2.1 access tokens) or `both`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AuthModeView {
    Keys,
    Oauth,
    Both,
}

impl AuthModeView {
    fn from_wire(mode: McpAuthMode) -> Self {
        match mode {
            McpAuthMode::Oauth => Self::Oauth,
            McpAuthMode::Both => Self::Both,
            McpAuthMode::Keys | McpAuthMode::Unspecified => Self::Keys,
        }
    }

    fn wire(self) -> McpAuthMode {
        match self {
            Self::Keys => McpAuthMode::Keys,
            Self::Oauth => McpAuthMode::Oauth,
            Self::Both => McpAuthMode::Both,
        }
    }
}

/// One rule of who may call what. A caller matches when every condition set matches (any one
/// value of each list); it may use the union of what the rules it matches allow. No rules:
/// every authenticated caller may use everything not blocked.
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CallRuleView {
    /// Token subjects (`sub`).
    pub subjects: Vec<String>,
    /// Values of the token's groups claim.
    pub groups: Vec<String>,
    /// Values of the token's roles claim (Entra ID app roles).
    pub roles: Vec<String>,
    /// Scopes the token holds.
    pub scopes: Vec<String>,
    /// MCP keys, by id or name.
    pub keys: Vec<String>,
    /// Packages (`weather`), tools (`weather.forecast`) or `*`.
    pub allow: Vec<String>,
}

/// The environment's MCP authentication as enforced.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct McpAuthView {
    pub mode: AuthModeView,
    /// True when the environment sets no mode of its own (the platform default applies).
    pub inherited: bool,
    /// Authorization servers whose tokens count.
    pub issuers: Vec<String>,
    /// Scopes advertised; a token must hold one (empty: any).
    pub scopes: Vec<String>,
    pub rules: Vec<CallRuleView>,
    /// Per caller at the edge; 0 = unlimited.
    pub calls_per_second: u32,
    /// The resource tokens must name as their audience (RFC 8707).
    pub resource: String,
    /// Where clients read the protected resource metadata (RFC 9728), when tokens are taken.
    pub metadata_url: Option<String>,
}

impl McpAuthView {
    pub fn from_wire(auth: Option<McpAuth>, inherited: bool) -> Self {
        let auth = auth.unwrap_or_default();
        let mode = AuthModeView::from_wire(auth.mode());
        let metadata_url = (mode != AuthModeView::Keys && !auth.resource.is_empty())
            .then(|| ramen_oauth_resource::metadata_url(&auth.resource));
        Self {
            mode,
            inherited,
            issuers: auth.issuers,
            scopes: auth.scopes,
            rules: auth
                .rules
                .into_iter()
                .map(|r| CallRuleView {
                    subjects: r.subjects,
                    groups: r.groups,
                    roles: r.roles,
                    scopes: r.scopes,
                    keys: r.keys,
                    allow: r.allow,
                })
                .collect(),
            calls_per_second: auth.calls_per_second,
            resource: auth.resource,
            metadata_url,
        }
    }
}

/// The whole setting, replacing the one in force. Absent `mode` = follow the platform
/// default; absent issuers or scopes = the platform's.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct McpAuthBody {
    pub mode: Option<AuthModeView>,
    pub issuers: Vec<String>,
    pub scopes: Vec<String>,
    pub rules: Vec<CallRuleView>,
    /// Per caller at the edge; 0 = unlimited.
    pub calls_per_second: u32,
}

impl McpAuthBody {
    pub fn wire(self) -> McpAuth {
        McpAuth {
            mode: self.mode.map_or(McpAuthMode::Unspecified, AuthModeView::wire) as i32,
            issuers: self.issuers,
            scopes: self.scopes,
            rules: self
                .rules
                .into_iter()
                .map(|r| CallRule {
                    subjects: r.subjects,
                    groups: r.groups,
                    roles: r.roles,
                    scopes: r.scopes,
                    keys: r.keys,
                    allow: r.allow,
                })
                .collect(),
            calls_per_second: self.calls_per_second,
            resource: String::new(),
        }
    }
}

/// Sets how the environment's MCP clients authenticate (MCP keys, OAuth 2.1 access tokens or
/// both), the authorization servers and scopes, the rules of who may call what and the
/// per-caller rate. Reaches the running nodes and the edge at once.
#[utoipa::path(put, path = "/api/groups/{group}/environments/{env}/auth", tag = "environments",
    params(("group" = String, Path), ("env" = String, Path)), request_body = McpAuthBody,
    responses((status = 200, body = EnvironmentView), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn set_environment_auth(
    State(gateway): State<Gateway>,
    authed: Authed,
    Path((group, name)): Path<(String, String)>,
    Body(body): Body<McpAuthBody>,
) -> ApiResult<Json<EnvironmentView>> {
    let request =
        pb::UpdateEnvironmentRequest { group, name, auth: Some(body.wire()), ..Default::default() };
    let env =
        gateway.clients().deployer.clone().update_environment(authed.call.request(request)).await?;
    Ok(Json(EnvironmentView::from(env.into_inner())))
}
