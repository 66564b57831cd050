//! `AuthService` over gRPC: each RPC takes the caller the serving layer verified ([`Caller`]), calls the
//! domain and converts the answer. Role checks live in the domain, so they hold for every
//! caller, not only for the api-gateway.

use ramen_proto::auth::v1::auth_service_server::AuthService;
use ramen_proto::auth::v1::*;
use tonic::{Request, Response, Status};

use crate::Auth;
use crate::audit::AuditQuery;
use crate::conversions as conv;
use crate::keys::NewKey;
use crate::members::Who;
use crate::model::now_ms;
use crate::secrets::Scope;
use ramen_access::Caller;
use ramen_crypto::seal::SecretValue;

pub struct AuthGrpc(pub Auth);

type Answer<T> = Result<Response<T>, Status>;

fn split<T>(request: Request<T>) -> (Caller, T) {
    (Caller::from_request(&request), request.into_inner())
}

fn ok<T>(value: T) -> Answer<T> {
    Ok(Response::new(value))
}

fn scope(scope: Option<SecretScope>) -> Scope {
    let scope = scope.unwrap_or_default();
    Scope { environment: scope.environment, zone: scope.zone }
}

#[tonic::async_trait]
impl AuthService for AuthGrpc {
    async fn login(&self, request: Request<LoginRequest>) -> Answer<LoginResponse> {
        let (caller, r) = split(request);
        ok(conv::session(self.0.login(&caller, &r.email, &r.password).await?))
    }

    async fn refresh(&self, request: Request<RefreshRequest>) -> Answer<LoginResponse> {
        ok(conv::session(self.0.refresh(&request.into_inner().refresh_token).await?))
    }

    async fn logout(&self, request: Request<LogoutRequest>) -> Answer<LogoutResponse> {
        let (caller, r) = split(request);
        self.0.logout(&caller, &r.refresh_token).await?;
        ok(LogoutResponse {})
    }

    async fn change_password(
        &self,
        request: Request<ChangePasswordRequest>,
    ) -> Answer<LoginResponse> {
        let (caller, r) = split(request);
        let session = self
            .0
            .change_password(&caller, &r.user_id, &r.current_password, &r.new_password)
            .await?;
        ok(conv::session(session))
    }

    async fn get_bootstrap_status(
        &self,
        _: Request<GetBootstrapStatusRequest>,
    ) -> Answer<GetBootstrapStatusResponse> {
        let (has_users, bootstrap_password_pending) = self.0.bootstrap_status().await?;
        ok(GetBootstrapStatusResponse { has_users, bootstrap_password_pending })
    }

    async fn get_sign_in_options(
        &self,
        _: Request<GetSignInOptionsRequest>,
    ) -> Answer<SignInOptions> {
        let options = self.0.sign_in_options();
        ok(SignInOptions {
            sso_enabled: options.sso_enabled,
            sso_button: options.sso_button,
            password_sign_in: options.password_sign_in,
        })
    }

    async fn start_sso(&self, request: Request<StartSsoRequest>) -> Answer<StartSsoResponse> {
        let r = request.into_inner();
        let cli = match (r.cli_port, r.cli_code_challenge.is_empty()) {
            (0, true) => None,
            (port, false) if port > 0 => {
                let port = u16::try_from(port).map_err(|_| {
                    Status::invalid_argument(format!("cli_port: {port} is not a port number"))
                })?;
                Some((port, r.cli_code_challenge))
            }
            _ => {
                return Err(Status::invalid_argument(
                    "cli_port and code_challenge: a CLI sign-in needs both",
                ));
            }
        };
        let started = self.0.start_sso(&r.next, cli).await?;
        ok(StartSsoResponse { authorization_url: started.authorization_url, state: started.state })
    }

    async fn finish_sso(&self, request: Request<FinishSsoRequest>) -> Answer<FinishSsoResponse> {
        let (caller, r) = split(request);
        let callback = crate::Callback {
            state: &r.state,
            code: &r.code,
            iss: &r.iss,
            error: &r.error,
            error_description: &r.error_description,
        };
        ok(match self.0.finish_sso(&caller, callback).await? {
            crate::SsoFinish::Console { session, next } => FinishSsoResponse {
                redirect: next,
                session: Some(conv::session(*session)),
                error: String::new(),
            },
            crate::SsoFinish::ConsoleFailed { error } => {
                FinishSsoResponse { redirect: String::new(), session: None, error }
            }
            crate::SsoFinish::Cli { redirect } => {
                FinishSsoResponse { redirect, session: None, error: String::new() }
            }
        })
    }

    async fn redeem_sso_code(
        &self,
        request: Request<RedeemSsoCodeRequest>,
    ) -> Answer<LoginResponse> {
        let r = request.into_inner();
        ok(conv::session(self.0.redeem_sso_code(&r.code, &r.code_verifier).await?))
    }

    async fn verify_access_token(
        &self,
        request: Request<VerifyAccessTokenRequest>,
    ) -> Answer<VerifyAccessTokenResponse> {
        let claims = self.0.verify_access(&request.into_inner().access_token).await?;
        let memberships = self.0.memberships_of(&claims.sub).await?;
        ok(VerifyAccessTokenResponse {
            claims: Some(Claims {
                user_id: claims.sub,
                email: claims.email,
                super_admin: claims.sa,
                memberships: memberships.iter().map(|m| conv::membership(m, "")).collect(),
                issued_at: Some(conv::ts(claims.iat * 1000)),
                expires_at: Some(conv::ts(claims.exp * 1000)),
                key_id: claims.kid,
                must_change_password: claims.mcp,
            }),
        })
    }

    async fn create_user(&self, request: Request<CreateUserRequest>) -> Answer<CreateUserResponse> {
        let (caller, r) = split(request);
        let created = self.0.create_user(&caller, &r.email, &r.password, r.super_admin).await?;
        ok(CreateUserResponse {
            user: Some(conv::user(&created.user)),
            one_time_password: created.one_time_password.unwrap_or_default(),
        })
    }

    async fn list_users(&self, request: Request<ListUsersRequest>) -> Answer<ListUsersResponse> {
        let (caller, r) = split(request);
        let (users, page) = self.0.list_users(&caller, r.page.as_ref(), &r.email_prefix).await?;
        ok(ListUsersResponse { users: users.iter().map(conv::user).collect(), page: Some(page) })
    }

    async fn get_user(&self, request: Request<GetUserRequest>) -> Answer<GetUserResponse> {
        let (caller, r) = split(request);
        let (user, memberships) = self.0.get_user(&caller, &r.user_id).await?;
        let email = user.value.email.clone();
        let memberships = memberships.iter().map(|m| conv::membership(m, &email)).collect();
        ok(GetUserResponse { user: Some(conv::user(&user)), memberships })
    }

    async fn delete_user(&self, request: Request<DeleteUserRequest>) -> Answer<DeleteUserResponse> {
        let (caller, r) = split(request);
        self.0.delete_user(&caller, &r.user_id).await?;
        ok(DeleteUserResponse {})
    }

    async fn set_super_admin(&self, request: Request<SetSuperAdminRequest>) -> Answer<User> {
        let (caller, r) = split(request);
        ok(conv::user(&self.0.set_super_admin(&caller, &r.user_id, r.super_admin).await?))
    }

    async fn add_member(&self, request: Request<AddMemberRequest>) -> Answer<Membership> {
        let (caller, r) = split(request);
        let role = conv::role_from_pb(r.role())?;
        let who = if r.user_id.is_empty() { Who::Email(&r.email) } else { Who::Id(&r.user_id) };
        ok(conv::member(&self.0.add_member(&caller, &r.group, who, role).await?))
    }

    async fn remove_member(
        &self,
        request: Request<RemoveMemberRequest>,
    ) -> Answer<RemoveMemberResponse> {
        let (caller, r) = split(request);
        self.0.remove_member(&caller, &r.group, &r.user_id).await?;
        ok(RemoveMemberResponse {})
    }

    async fn list_members(
        &self,
        request: Request<ListMembersRequest>,
    ) -> Answer<ListMembersResponse> {
        let (caller, r) = split(request);
        let (members, page) = self.0.list_members(&caller, &r.group, r.page.as_ref()).await?;
        ok(ListMembersResponse {
            members: members.iter().map(conv::member).collect(),
            page: Some(page),
        })
    }

    async fn authorize(&self, request: Request<AuthorizeRequest>) -> Answer<AuthorizeResponse> {
        let r = request.into_inner();
        let (answer, ()) = tokio::try_join!(
            self.0.authorize(&r.user_id, &r.group, r.action()),
            self.0.session_live(&r.session_id),
        )?;
        ok(answer)
    }

    async fn get_grants(&self, request: Request<GetGrantsRequest>) -> Answer<AuthorizeResponse> {
        let r = request.into_inner();
        let (answer, ()) =
            tokio::try_join!(self.0.grants(&r.user_id), self.0.session_live(&r.session_id))?;
        ok(answer)
    }

    async fn create_mcp_key(
        &self,
        request: Request<CreateMcpKeyRequest>,
    ) -> Answer<CreateMcpKeyResponse> {
        let (caller, r) = split(request);
        let expires_at_ms = r.expires_at.as_ref().map(conv::ms);
        let new = NewKey {
            group: r.group,
            name: r.name,
            environments: r.environments,
            zones: r.zones,
            expires_at_ms,
        };
        let (key, plaintext) = self.0.create_key(&caller, new).await?;
        ok(CreateMcpKeyResponse { key: Some(conv::key(&key)), plaintext })
    }

    async fn list_mcp_keys(
        &self,
        request: Request<ListMcpKeysRequest>,
    ) -> Answer<ListMcpKeysResponse> {
        let (caller, r) = split(request);
        let (keys, page) =
            self.0.list_keys(&caller, &r.group, r.page.as_ref(), r.include_revoked).await?;
        ok(ListMcpKeysResponse { keys: keys.iter().map(conv::key).collect(), page: Some(page) })
    }

    async fn revoke_mcp_key(&self, request: Request<RevokeMcpKeyRequest>) -> Answer<McpKey> {
        let (caller, r) = split(request);
        ok(conv::key(&self.0.revoke_key(&caller, &r.group, &r.key_id).await?))
    }

    async fn list_mcp_key_hashes(
        &self,
        request: Request<ListMcpKeyHashesRequest>,
    ) -> Answer<ListMcpKeyHashesResponse> {
        let (caller, r) = split(request);
        let (keys, page) = self
            .0
            .list_key_hashes(&caller, &r.group, &r.environment, &r.zone, r.page.as_ref())
            .await?;
        ok(ListMcpKeyHashesResponse { keys, page: Some(page) })
    }

    async fn record_mcp_key_use(
        &self,
        request: Request<RecordMcpKeyUseRequest>,
    ) -> Answer<RecordMcpKeyUseResponse> {
        let (caller, r) = split(request);
        let uses = r
            .uses
            .into_iter()
            .map(|u| (u.group, u.key_id, u.at.as_ref().map_or(0, conv::ms)))
            .collect();
        ok(RecordMcpKeyUseResponse { recorded: self.0.record_key_use(&caller, uses).await? })
    }

    async fn set_secret(&self, request: Request<SetSecretRequest>) -> Answer<Secret> {
        let (caller, r) = split(request);
        let value = SecretValue::new(r.value);
        ok(conv::secret(
            &self.0.set_secret(&caller, &r.group, &r.name, scope(r.scope), value).await?,
        ))
    }

    async fn list_secrets(
        &self,
        request: Request<ListSecretsRequest>,
    ) -> Answer<ListSecretsResponse> {
        let (caller, r) = split(request);
        let (secrets, page) = self.0.list_secrets(&caller, &r.group, r.page.as_ref()).await?;
        ok(ListSecretsResponse {
            secrets: secrets.iter().map(conv::secret).collect(),
            page: Some(page),
        })
    }

    async fn delete_secret(
        &self,
        request: Request<DeleteSecretRequest>,
    ) -> Answer<DeleteSecretResponse> {
        let (caller, r) = split(request);
        self.0.delete_secret(&caller, &r.group, &r.name, scope(r.scope)).await?;
        ok(DeleteSecretResponse {})
    }

    async fn resolve_secrets(
        &self,
        request: Request<ResolveSecretsRequest>,
    ) -> Answer<ResolveSecretsResponse> {
        let (caller, r) = split(request);
        let resolved = self.0.resolve_secrets(&caller, &r.group, &r.environment, &r.zone).await?;
        let secrets = resolved
            .into_iter()
            .map(|s| ResolvedSecret {
                name: s.name,
                value: s.value.into_inner(),
                scope: Some(SecretScope { environment: s.scope.environment, zone: s.scope.zone }),
            })
            .collect();
        ok(ResolveSecretsResponse { secrets })
    }

    async fn get_service_account_rules(
        &self,
        request: Request<GetServiceAccountRulesRequest>,
    ) -> Answer<ServiceAccountRules> {
        let (caller, r) = split(request);
        let rules = self.0.get_service_account(&caller, &r.group).await?;
        let bounds = self.0.service_account_bounds().await?;
        ok(conv::service_account(&r.group, &rules, &bounds))
    }

    async fn set_service_account_rules(
        &self,
        request: Request<SetServiceAccountRulesRequest>,
    ) -> Answer<ServiceAccountRules> {
        let (caller, r) = split(request);
        let rules = conv::rules_from_pb(r.rules);
        let written =
            self.0.set_service_account(&caller, &r.group, rules, r.expected_version).await?;
        let bounds = self.0.service_account_bounds().await?;
        ok(conv::service_account(&r.group, &written, &bounds))
    }

    async fn get_service_account_bounds(
        &self,
        request: Request<GetServiceAccountBoundsRequest>,
    ) -> Answer<ServiceAccountBounds> {
        let (caller, _) = split(request);
        ok(conv::bounds(&self.0.get_service_account_bounds(&caller).await?))
    }

    async fn set_service_account_bounds(
        &self,
        request: Request<SetServiceAccountBoundsRequest>,
    ) -> Answer<ServiceAccountBounds> {
        let (caller, r) = split(request);
        let (Some(aws), Some(gcp)) = (r.aws, r.gcp) else {
            return Err(Status::invalid_argument("bounds: both aws and gcp are required"));
        };
        let bounds = ramen_grant_bounds::Bounds::from_pb(Some(aws), Some(gcp));
        let written =
            self.0.set_service_account_bounds(&caller, bounds, r.expected_version).await?;
        ok(conv::bounds(&written))
    }

    async fn append_audit(&self, request: Request<AppendAuditRequest>) -> Answer<AuditEntry> {
        let (caller, r) = split(request);
        let entry = r.entry.ok_or_else(|| Status::invalid_argument("entry: required"))?;
        let (id, mut record) = conv::audit_from_pb(entry, now_ms());
        if record.request_id.is_empty() {
            record.request_id = caller.request_id;
        }
        let (id, record) = self.0.append_audit(id, record).await?;
        ok(conv::audit_to_pb(id, record))
    }

    async fn query_audit(&self, request: Request<QueryAuditRequest>) -> Answer<QueryAuditResponse> {
        let (caller, r) = split(request);
        let query = AuditQuery {
            group: r.group,
            actor: r.actor,
            since_ms: r.since.as_ref().map(conv::ms),
            until_ms: r.until.as_ref().map(conv::ms),
            action_prefix: r.action_prefix,
            page: r.page,
        };
        let (entries, page) = self.0.query_audit(&caller, query).await?;
        ok(QueryAuditResponse {
            entries: entries.into_iter().map(|(id, e)| conv::audit_to_pb(id, e)).collect(),
            page: Some(page),
        })
    }

    async fn query_calls(&self, request: Request<QueryCallsRequest>) -> Answer<QueryCallsResponse> {
        let (caller, r) = split(request);
        ok(self.0.query_calls(&caller, r).await?)
    }

    async fn call_usage(&self, request: Request<CallUsageRequest>) -> Answer<CallUsageResponse> {
        let (caller, r) = split(request);
        ok(self.0.call_usage(&caller, r).await?)
    }

    async fn purge_group(&self, request: Request<PurgeGroupRequest>) -> Answer<PurgeGroupResponse> {
        let (caller, r) = split(request);
        ok(self.0.purge_group(&caller, &r.group).await?)
    }

    async fn register_group(
        &self,
        request: Request<RegisterGroupRequest>,
    ) -> Answer<RegisterGroupResponse> {
        let (caller, r) = split(request);
        ok(RegisterGroupResponse { created: self.0.register_group(&caller, &r.group).await? })
    }
}
